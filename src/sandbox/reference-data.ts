/**
 * Fixed reference data of the sandbox: countries with their states, sub categories,
 * the cities businesses are placed in, the directories listings live on, and the words
 * names are made of. Ids are stable: tests and warehouses may keep them.
 */

export interface Country {
  id: number;
  name: string;
}

export interface State {
  id: number;
  name: string;
  iso: string;
  country_id: number;
}

export interface SubCategory {
  id: number;
  name: string;
  /** Only primary sub categories may be given on create; never served (the upstream hides it). */
  primary: boolean;
  /** Search phrases for keywords of a business in this category. */
  stems: readonly string[];
}

export const COUNTRIES: readonly Country[] = [
  { id: 1, name: 'United States' },
  { id: 2, name: 'Canada' },
  { id: 3, name: 'United Kingdom' },
  { id: 4, name: 'Australia' },
  { id: 5, name: 'Ireland' },
];

const US_STATES: ReadonlyArray<readonly [string, string]> = [
  ['AL', 'Alabama'],
  ['AK', 'Alaska'],
  ['AZ', 'Arizona'],
  ['AR', 'Arkansas'],
  ['CA', 'California'],
  ['CO', 'Colorado'],
  ['CT', 'Connecticut'],
  ['DE', 'Delaware'],
  ['DC', 'District of Columbia'],
  ['FL', 'Florida'],
  ['GA', 'Georgia'],
  ['HI', 'Hawaii'],
  ['ID', 'Idaho'],
  ['IL', 'Illinois'],
  ['IN', 'Indiana'],
  ['IA', 'Iowa'],
  ['KS', 'Kansas'],
  ['KY', 'Kentucky'],
  ['LA', 'Louisiana'],
  ['ME', 'Maine'],
  ['MD', 'Maryland'],
  ['MA', 'Massachusetts'],
  ['MI', 'Michigan'],
  ['MN', 'Minnesota'],
  ['MS', 'Mississippi'],
  ['MO', 'Missouri'],
  ['MT', 'Montana'],
  ['NE', 'Nebraska'],
  ['NV', 'Nevada'],
  ['NH', 'New Hampshire'],
  ['NJ', 'New Jersey'],
  ['NM', 'New Mexico'],
  ['NY', 'New York'],
  ['NC', 'North Carolina'],
  ['ND', 'North Dakota'],
  ['OH', 'Ohio'],
  ['OK', 'Oklahoma'],
  ['OR', 'Oregon'],
  ['PA', 'Pennsylvania'],
  ['RI', 'Rhode Island'],
  ['SC', 'South Carolina'],
  ['SD', 'South Dakota'],
  ['TN', 'Tennessee'],
  ['TX', 'Texas'],
  ['UT', 'Utah'],
  ['VT', 'Vermont'],
  ['VA', 'Virginia'],
  ['WA', 'Washington'],
  ['WV', 'West Virginia'],
  ['WI', 'Wisconsin'],
  ['WY', 'Wyoming'],
];

const CA_PROVINCES: ReadonlyArray<readonly [string, string]> = [
  ['AB', 'Alberta'],
  ['BC', 'British Columbia'],
  ['MB', 'Manitoba'],
  ['NB', 'New Brunswick'],
  ['NL', 'Newfoundland and Labrador'],
  ['NS', 'Nova Scotia'],
  ['NT', 'Northwest Territories'],
  ['NU', 'Nunavut'],
  ['ON', 'Ontario'],
  ['PE', 'Prince Edward Island'],
  ['QC', 'Quebec'],
  ['SK', 'Saskatchewan'],
  ['YT', 'Yukon'],
];

const UK_NATIONS: ReadonlyArray<readonly [string, string]> = [
  ['ENG', 'England'],
  ['SCT', 'Scotland'],
  ['WLS', 'Wales'],
  ['NIR', 'Northern Ireland'],
];

const AU_STATES: ReadonlyArray<readonly [string, string]> = [
  ['NSW', 'New South Wales'],
  ['VIC', 'Victoria'],
  ['QLD', 'Queensland'],
  ['WA', 'Western Australia'],
  ['SA', 'South Australia'],
  ['TAS', 'Tasmania'],
  ['ACT', 'Australian Capital Territory'],
  ['NT', 'Northern Territory'],
];

const IE_PROVINCES: ReadonlyArray<readonly [string, string]> = [
  ['L', 'Leinster'],
  ['M', 'Munster'],
  ['C', 'Connacht'],
  ['U', 'Ulster'],
];

function numberStates(): State[] {
  const groups: Array<[number, ReadonlyArray<readonly [string, string]>]> = [
    [1, US_STATES],
    [2, CA_PROVINCES],
    [3, UK_NATIONS],
    [4, AU_STATES],
    [5, IE_PROVINCES],
  ];
  const states: State[] = [];
  for (const [countryId, list] of groups) {
    for (const [iso, name] of list) {
      states.push({ id: states.length + 1, name, iso, country_id: countryId });
    }
  }
  return states;
}

export const STATES: readonly State[] = numberStates();
export const STATE_BY_ID: ReadonlyMap<number, State> = new Map(STATES.map((s) => [s.id, s]));

export function stateByIso(countryId: number, iso: string): State {
  const state = STATES.find((s) => s.country_id === countryId && s.iso === iso);
  if (!state) throw new Error(`no state ${iso} in country ${countryId}`);
  return state;
}

/** [name, primary, stems]; ids are the position plus 1, so never reorder, only append. */
const SUB_CATEGORY_ROWS: ReadonlyArray<readonly [string, boolean, readonly string[]]> = [
  ['Plumbers', true, ['plumber', 'emergency plumber', 'drain cleaning', 'water heater repair']],
  ['Electricians', true, ['electrician', 'electrical contractor', 'panel upgrade']],
  ['HVAC Contractors', true, ['hvac repair', 'ac repair', 'furnace repair', 'heating and cooling']],
  ['Roofing Contractors', true, ['roofer', 'roof repair', 'roof replacement']],
  ['General Contractors', true, ['general contractor', 'home remodeling', 'kitchen remodel']],
  ['Landscapers', true, ['landscaping', 'lawn care', 'tree trimming']],
  ['House Cleaning Services', true, ['house cleaning', 'maid service', 'deep cleaning']],
  ['Pest Control', true, ['pest control', 'exterminator', 'termite inspection']],
  ['Locksmiths', true, ['locksmith', 'lockout service', 'car key replacement']],
  ['Movers', true, ['movers', 'moving company', 'local movers']],
  ['Auto Repair', true, ['auto repair', 'mechanic', 'brake repair', 'oil change']],
  ['Auto Body Shops', true, ['auto body shop', 'collision repair', 'dent repair']],
  ['Car Dealers', true, ['car dealer', 'used cars', 'new cars']],
  ['Tire Shops', false, ['tire shop', 'tire repair', 'wheel alignment']],
  ['Car Wash', false, ['car wash', 'auto detailing']],
  ['Dentists', true, ['dentist', 'family dentist', 'teeth whitening', 'emergency dentist']],
  ['Orthodontists', false, ['orthodontist', 'braces', 'invisalign']],
  ['Chiropractors', true, ['chiropractor', 'back pain relief', 'spinal adjustment']],
  ['Physical Therapists', true, ['physical therapy', 'sports injury rehab']],
  ['Optometrists', true, ['optometrist', 'eye exam', 'eyeglasses']],
  ['Family Doctors', true, ['family doctor', 'primary care physician', 'walk in clinic']],
  ['Pediatricians', false, ['pediatrician', 'childrens doctor']],
  ['Dermatologists', false, ['dermatologist', 'acne treatment', 'skin clinic']],
  ['Veterinarians', true, ['veterinarian', 'animal hospital', 'pet clinic']],
  ['Pet Groomers', false, ['dog grooming', 'pet groomer']],
  ['Pharmacies', true, ['pharmacy', 'drugstore', 'compounding pharmacy']],
  ['Restaurants', true, ['restaurant', 'best restaurant', 'dinner']],
  ['Pizza', false, ['pizza', 'pizza delivery', 'wood fired pizza']],
  ['Mexican Restaurants', false, ['mexican restaurant', 'tacos', 'burritos']],
  ['Italian Restaurants', false, ['italian restaurant', 'pasta', 'trattoria']],
  ['Chinese Restaurants', false, ['chinese restaurant', 'chinese takeout', 'dim sum']],
  ['Sushi Bars', false, ['sushi', 'sushi bar', 'japanese restaurant']],
  ['Burgers', false, ['burgers', 'burger joint']],
  ['Barbecue', false, ['bbq', 'barbecue restaurant', 'brisket']],
  ['Cafes', true, ['coffee shop', 'cafe', 'espresso bar']],
  ['Bakeries', true, ['bakery', 'custom cakes', 'fresh bread']],
  ['Bars', true, ['bar', 'cocktail bar', 'happy hour']],
  ['Breweries', false, ['brewery', 'craft beer', 'taproom']],
  ['Caterers', true, ['catering', 'event catering', 'wedding caterer']],
  ['Food Trucks', false, ['food truck', 'street food']],
  ['Grocery Stores', true, ['grocery store', 'organic groceries', 'supermarket']],
  ['Florists', true, ['florist', 'flower delivery', 'wedding flowers']],
  ['Hair Salons', true, ['hair salon', 'haircut', 'hair color', 'balayage']],
  ['Barbers', true, ['barber', 'barbershop', 'mens haircut']],
  ['Nail Salons', true, ['nail salon', 'manicure', 'pedicure']],
  ['Day Spas', true, ['day spa', 'massage', 'facial']],
  ['Massage Therapists', false, ['massage therapist', 'deep tissue massage']],
  ['Tattoo Parlors', false, ['tattoo shop', 'tattoo artist']],
  ['Gyms', true, ['gym', 'fitness center', '24 hour gym']],
  ['Yoga Studios', true, ['yoga studio', 'hot yoga', 'yoga classes']],
  ['Martial Arts Schools', false, ['martial arts', 'karate classes', 'bjj']],
  ['Dance Studios', false, ['dance studio', 'dance lessons']],
  ['Personal Trainers', false, ['personal trainer', 'fitness coach']],
  ['Lawyers', true, ['lawyer', 'attorney', 'law firm']],
  ['Personal Injury Attorneys', false, ['personal injury lawyer', 'car accident lawyer']],
  ['Divorce Attorneys', false, ['divorce lawyer', 'family law attorney']],
  ['Criminal Defense Attorneys', false, ['criminal defense lawyer', 'dui attorney']],
  ['Accountants', true, ['accountant', 'cpa', 'tax preparation', 'bookkeeping']],
  ['Financial Advisors', true, ['financial advisor', 'retirement planning', 'wealth management']],
  ['Insurance Agents', true, ['insurance agent', 'auto insurance', 'home insurance']],
  ['Real Estate Agents', true, ['realtor', 'real estate agent', 'homes for sale']],
  ['Property Management', false, ['property management', 'rental management']],
  ['Mortgage Brokers', false, ['mortgage broker', 'home loans', 'refinance']],
  ['Banks', true, ['bank', 'credit union', 'checking account']],
  ['Hotels', true, ['hotel', 'boutique hotel', 'hotel near me']],
  ['Bed and Breakfasts', false, ['bed and breakfast', 'inn']],
  ['Travel Agencies', true, ['travel agency', 'vacation packages']],
  ['Event Venues', true, ['event venue', 'wedding venue', 'banquet hall']],
  ['Wedding Planners', false, ['wedding planner', 'event planner']],
  ['Photographers', true, ['photographer', 'wedding photographer', 'headshots']],
  ['Printing Services', true, ['print shop', 'business cards', 'printing services']],
  ['Sign Makers', false, ['sign company', 'custom signs']],
  ['Computer Repair', true, ['computer repair', 'laptop repair', 'it support']],
  ['Cell Phone Repair', false, ['phone repair', 'iphone screen repair']],
  ['Web Designers', true, ['web design', 'website developer', 'seo agency']],
  ['Marketing Agencies', true, ['marketing agency', 'digital marketing']],
  ['Staffing Agencies', false, ['staffing agency', 'temp agency']],
  ['Child Care', true, ['daycare', 'child care', 'preschool']],
  ['Tutoring', true, ['tutoring', 'math tutor', 'sat prep']],
  ['Driving Schools', false, ['driving school', 'driving lessons']],
  ['Music Schools', false, ['music lessons', 'piano lessons', 'guitar lessons']],
  ['Churches', true, ['church', 'worship service']],
  ['Funeral Homes', true, ['funeral home', 'cremation services']],
  ['Storage Facilities', true, ['self storage', 'storage units']],
  ['Furniture Stores', true, ['furniture store', 'sofas', 'mattress store']],
  ['Hardware Stores', true, ['hardware store', 'tools']],
  ['Clothing Stores', true, ['clothing store', 'boutique', 'womens clothing']],
  ['Shoe Stores', false, ['shoe store', 'running shoes']],
  ['Jewelry Stores', true, ['jewelry store', 'engagement rings', 'jeweler']],
  ['Book Stores', false, ['bookstore', 'used books']],
  ['Pet Stores', true, ['pet store', 'pet supplies']],
  ['Bike Shops', false, ['bike shop', 'bicycle repair']],
  ['Liquor Stores', false, ['liquor store', 'wine shop']],
  ['Garden Centers', false, ['garden center', 'plant nursery']],
  ['Appliance Repair', true, ['appliance repair', 'washer repair', 'refrigerator repair']],
  ['Carpet Cleaning', false, ['carpet cleaning', 'upholstery cleaning']],
  ['Painters', true, ['house painter', 'painting contractor', 'interior painting']],
  ['Flooring', false, ['flooring store', 'hardwood floors', 'tile installation']],
  ['Window Cleaning', false, ['window cleaning', 'pressure washing']],
  ['Junk Removal', false, ['junk removal', 'trash hauling']],
  ['Towing', true, ['towing', 'tow truck', 'roadside assistance']],
];

export const SUB_CATEGORIES: readonly SubCategory[] = SUB_CATEGORY_ROWS.map(
  ([name, primary, stems], index) => ({ id: index + 1, name, primary, stems }),
);
export const SUB_CATEGORY_BY_ID: ReadonlyMap<number, SubCategory> = new Map(
  SUB_CATEGORIES.map((c) => [c.id, c]),
);
export const PRIMARY_SUB_CATEGORIES: readonly SubCategory[] = SUB_CATEGORIES.filter(
  (c) => c.primary,
);

export interface City {
  name: string;
  countryId: number;
  stateIso: string;
  latitude: number;
  longitude: number;
  /** Three-digit telephone area code. */
  areaCode: string;
  /** Makes a postal code from a number in [0, 1). */
  postal: (r: number) => string;
}

const usZip = (prefix: string) => (r: number) =>
  `${prefix}${String(Math.floor(r * 100)).padStart(2, '0')}`;
const caPostal = (fsa: string) => (r: number) => {
  const n = Math.floor(r * 1000);
  const letters = 'ABCEGHJKLMNPRSTVXY';
  return `${fsa} ${n % 10}${letters[Math.floor(n / 10) % letters.length]}${Math.floor(n / 100) % 10}`;
};

/** Weighted towards the US, with a few Canadian cities, as the upstream's customers are. */
export const CITIES: readonly City[] = [
  {
    name: 'Austin',
    countryId: 1,
    stateIso: 'TX',
    latitude: 30.2672,
    longitude: -97.7431,
    areaCode: '512',
    postal: usZip('787'),
  },
  {
    name: 'Dallas',
    countryId: 1,
    stateIso: 'TX',
    latitude: 32.7767,
    longitude: -96.797,
    areaCode: '214',
    postal: usZip('752'),
  },
  {
    name: 'Houston',
    countryId: 1,
    stateIso: 'TX',
    latitude: 29.7604,
    longitude: -95.3698,
    areaCode: '713',
    postal: usZip('770'),
  },
  {
    name: 'San Antonio',
    countryId: 1,
    stateIso: 'TX',
    latitude: 29.4241,
    longitude: -98.4936,
    areaCode: '210',
    postal: usZip('782'),
  },
  {
    name: 'Phoenix',
    countryId: 1,
    stateIso: 'AZ',
    latitude: 33.4484,
    longitude: -112.074,
    areaCode: '602',
    postal: usZip('850'),
  },
  {
    name: 'Denver',
    countryId: 1,
    stateIso: 'CO',
    latitude: 39.7392,
    longitude: -104.9903,
    areaCode: '303',
    postal: usZip('802'),
  },
  {
    name: 'Seattle',
    countryId: 1,
    stateIso: 'WA',
    latitude: 47.6062,
    longitude: -122.3321,
    areaCode: '206',
    postal: usZip('981'),
  },
  {
    name: 'Portland',
    countryId: 1,
    stateIso: 'OR',
    latitude: 45.5152,
    longitude: -122.6784,
    areaCode: '503',
    postal: usZip('972'),
  },
  {
    name: 'San Diego',
    countryId: 1,
    stateIso: 'CA',
    latitude: 32.7157,
    longitude: -117.1611,
    areaCode: '619',
    postal: usZip('921'),
  },
  {
    name: 'Los Angeles',
    countryId: 1,
    stateIso: 'CA',
    latitude: 34.0522,
    longitude: -118.2437,
    areaCode: '213',
    postal: usZip('900'),
  },
  {
    name: 'Sacramento',
    countryId: 1,
    stateIso: 'CA',
    latitude: 38.5816,
    longitude: -121.4944,
    areaCode: '916',
    postal: usZip('958'),
  },
  {
    name: 'Las Vegas',
    countryId: 1,
    stateIso: 'NV',
    latitude: 36.1699,
    longitude: -115.1398,
    areaCode: '702',
    postal: usZip('891'),
  },
  {
    name: 'Salt Lake City',
    countryId: 1,
    stateIso: 'UT',
    latitude: 40.7608,
    longitude: -111.891,
    areaCode: '801',
    postal: usZip('841'),
  },
  {
    name: 'Chicago',
    countryId: 1,
    stateIso: 'IL',
    latitude: 41.8781,
    longitude: -87.6298,
    areaCode: '312',
    postal: usZip('606'),
  },
  {
    name: 'Minneapolis',
    countryId: 1,
    stateIso: 'MN',
    latitude: 44.9778,
    longitude: -93.265,
    areaCode: '612',
    postal: usZip('554'),
  },
  {
    name: 'Kansas City',
    countryId: 1,
    stateIso: 'MO',
    latitude: 39.0997,
    longitude: -94.5786,
    areaCode: '816',
    postal: usZip('641'),
  },
  {
    name: 'Columbus',
    countryId: 1,
    stateIso: 'OH',
    latitude: 39.9612,
    longitude: -82.9988,
    areaCode: '614',
    postal: usZip('432'),
  },
  {
    name: 'Indianapolis',
    countryId: 1,
    stateIso: 'IN',
    latitude: 39.7684,
    longitude: -86.1581,
    areaCode: '317',
    postal: usZip('462'),
  },
  {
    name: 'Detroit',
    countryId: 1,
    stateIso: 'MI',
    latitude: 42.3314,
    longitude: -83.0458,
    areaCode: '313',
    postal: usZip('482'),
  },
  {
    name: 'Nashville',
    countryId: 1,
    stateIso: 'TN',
    latitude: 36.1627,
    longitude: -86.7816,
    areaCode: '615',
    postal: usZip('372'),
  },
  {
    name: 'Atlanta',
    countryId: 1,
    stateIso: 'GA',
    latitude: 33.749,
    longitude: -84.388,
    areaCode: '404',
    postal: usZip('303'),
  },
  {
    name: 'Charlotte',
    countryId: 1,
    stateIso: 'NC',
    latitude: 35.2271,
    longitude: -80.8431,
    areaCode: '704',
    postal: usZip('282'),
  },
  {
    name: 'Raleigh',
    countryId: 1,
    stateIso: 'NC',
    latitude: 35.7796,
    longitude: -78.6382,
    areaCode: '919',
    postal: usZip('276'),
  },
  {
    name: 'Miami',
    countryId: 1,
    stateIso: 'FL',
    latitude: 25.7617,
    longitude: -80.1918,
    areaCode: '305',
    postal: usZip('331'),
  },
  {
    name: 'Orlando',
    countryId: 1,
    stateIso: 'FL',
    latitude: 28.5383,
    longitude: -81.3792,
    areaCode: '407',
    postal: usZip('328'),
  },
  {
    name: 'Tampa',
    countryId: 1,
    stateIso: 'FL',
    latitude: 27.9506,
    longitude: -82.4572,
    areaCode: '813',
    postal: usZip('336'),
  },
  {
    name: 'New York',
    countryId: 1,
    stateIso: 'NY',
    latitude: 40.7128,
    longitude: -74.006,
    areaCode: '212',
    postal: usZip('100'),
  },
  {
    name: 'Brooklyn',
    countryId: 1,
    stateIso: 'NY',
    latitude: 40.6782,
    longitude: -73.9442,
    areaCode: '718',
    postal: usZip('112'),
  },
  {
    name: 'Boston',
    countryId: 1,
    stateIso: 'MA',
    latitude: 42.3601,
    longitude: -71.0589,
    areaCode: '617',
    postal: usZip('021'),
  },
  {
    name: 'Philadelphia',
    countryId: 1,
    stateIso: 'PA',
    latitude: 39.9526,
    longitude: -75.1652,
    areaCode: '215',
    postal: usZip('191'),
  },
  {
    name: 'Pittsburgh',
    countryId: 1,
    stateIso: 'PA',
    latitude: 40.4406,
    longitude: -79.9959,
    areaCode: '412',
    postal: usZip('152'),
  },
  {
    name: 'Baltimore',
    countryId: 1,
    stateIso: 'MD',
    latitude: 39.2904,
    longitude: -76.6122,
    areaCode: '410',
    postal: usZip('212'),
  },
  {
    name: 'Washington',
    countryId: 1,
    stateIso: 'DC',
    latitude: 38.9072,
    longitude: -77.0369,
    areaCode: '202',
    postal: usZip('200'),
  },
  {
    name: 'New Orleans',
    countryId: 1,
    stateIso: 'LA',
    latitude: 29.9511,
    longitude: -90.0715,
    areaCode: '504',
    postal: usZip('701'),
  },
  {
    name: 'Boise',
    countryId: 1,
    stateIso: 'ID',
    latitude: 43.615,
    longitude: -116.2023,
    areaCode: '208',
    postal: usZip('837'),
  },
  {
    name: 'Albuquerque',
    countryId: 1,
    stateIso: 'NM',
    latitude: 35.0844,
    longitude: -106.6504,
    areaCode: '505',
    postal: usZip('871'),
  },
  {
    name: 'Toronto',
    countryId: 2,
    stateIso: 'ON',
    latitude: 43.6532,
    longitude: -79.3832,
    areaCode: '416',
    postal: caPostal('M5V'),
  },
  {
    name: 'Ottawa',
    countryId: 2,
    stateIso: 'ON',
    latitude: 45.4215,
    longitude: -75.6972,
    areaCode: '613',
    postal: caPostal('K1P'),
  },
  {
    name: 'Vancouver',
    countryId: 2,
    stateIso: 'BC',
    latitude: 49.2827,
    longitude: -123.1207,
    areaCode: '604',
    postal: caPostal('V6B'),
  },
  {
    name: 'Calgary',
    countryId: 2,
    stateIso: 'AB',
    latitude: 51.0447,
    longitude: -114.0719,
    areaCode: '403',
    postal: caPostal('T2P'),
  },
  {
    name: 'Montreal',
    countryId: 2,
    stateIso: 'QC',
    latitude: 45.5017,
    longitude: -73.5673,
    areaCode: '514',
    postal: caPostal('H3B'),
  },
];

/**
 * Directories a listing can live on. The first eight are on every business (op 9 needs
 * Facebook, Google and Yelp listings to check credentials against); the rest are each
 * present on most businesses, giving about 40 listings per business.
 */
export const CORE_DIRECTORIES: readonly string[] = [
  'Google',
  'Facebook',
  'Yelp',
  'Bing',
  'Yahoo Local',
  'Yellowpages',
  'Foursquare',
  'Apple Maps',
];
export const OTHER_DIRECTORIES: readonly string[] = [
  'MapQuest',
  'Superpages',
  'Citysearch',
  'Manta',
  'Hotfrog',
  'MerchantCircle',
  'Local.com',
  'Judys Book',
  'Insider Pages',
  'DexKnows',
  'CitySquares',
  'ShowMeLocal',
  'EZlocal',
  'ChamberofCommerce.com',
  'Brownbook',
  'Cylex',
  'Tupalo',
  'YellowBot',
  'TripAdvisor',
  'Angi',
  'Nextdoor',
  'Better Business Bureau',
  'Neustar Localeze',
  'Data Axle',
  'Acxiom',
  'Whitepages',
  'n49',
  'iBegin',
  'Opendi',
  'Find Open',
  'eLocal',
  'USCity.net',
  'Navmii',
  'TomTom',
  'HERE',
  'Waze',
  'GetFave',
  'AmericanTowns',
  'Tuugo',
  'Yalwa',
];
export const DIRECTORIES: readonly string[] = [...CORE_DIRECTORIES, ...OTHER_DIRECTORIES];

/** The only sites op 9 can post a response to (seed, rule 1). */
export const RESPONDABLE_SITES: ReadonlySet<string> = new Set(['Facebook', 'Google', 'Yelp']);

/** Review sites and their weights; each must be a directory above. */
export const REVIEW_SITES: ReadonlyArray<readonly [string, number]> = [
  ['Google', 30],
  ['Facebook', 18],
  ['Yelp', 20],
  ['Yellowpages', 8],
  ['TripAdvisor', 6],
  ['Foursquare', 5],
  ['Citysearch', 5],
  ['Superpages', 4],
  ['Bing', 4],
];

/** Social sites and the item types each produces. */
export const SOCIAL_SITES: ReadonlyArray<readonly [string, readonly string[]]> = [
  ['Facebook', ['Photo', 'Comment', 'LikesCount', 'Message']],
  ['Twitter', ['Tweet', 'LikesCount']],
  ['Instagram', ['Photo', 'Comment', 'LikesCount']],
  ['TripAdvisor', ['Attraction', 'Photo']],
  ['Foursquare', ['Attraction', 'Comment']],
];

/** Sites ranked for every keyword (seed, Ranking), besides `Google_new`. */
export const RANKING_SITES: readonly string[] = [
  'Google Maps',
  'Google',
  'Yahoo Local',
  'Yahoo',
  'Bing',
  'Yelp',
  'Yellowpages',
];

export const WEEKDAYS: readonly string[] = [
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday',
  'Sunday',
];

export const SURNAMES: readonly string[] = [
  'Hernandez',
  'Nguyen',
  'Patel',
  'Johnson',
  'Garcia',
  'Smith',
  'Kowalski',
  'Okafor',
  'Rossi',
  'Chen',
  'Murphy',
  'Schmidt',
  'Silva',
  'Kim',
  'Anderson',
  'Dubois',
  'Novak',
  'Larsen',
  'Singh',
  'Williams',
  'Brooks',
  'Reyes',
  'Baker',
  'Hughes',
  "O'Brien",
  'Moreau',
  'Yamamoto',
  'Fischer',
];
export const FIRST_NAMES: readonly string[] = [
  'Maria',
  'James',
  'Priya',
  'Daniel',
  'Sofia',
  'Michael',
  'Aisha',
  'David',
  'Elena',
  'Chris',
  'Jasmine',
  'Robert',
  'Mei',
  'Luis',
  'Hannah',
  'Omar',
  'Grace',
  'Tyler',
  'Fatima',
  'Ben',
];
export const NAME_WORDS: readonly string[] = [
  'Blue Door',
  'Golden Gate',
  'Evergreen',
  'Summit',
  'Riverside',
  'Lone Star',
  'Maple Leaf',
  'Harbor',
  'Cornerstone',
  'Red Oak',
  'Northside',
  'Sunrise',
  'Silver Line',
  'Main Street',
  'Cedar Park',
  'Pioneer',
  'Liberty',
  'Urban',
  'Bright Star',
  'Old Town',
  'Capitol',
  'Bayview',
];
export const STREET_NAMES: readonly string[] = [
  'Main',
  'Oak',
  'Congress',
  'Lamar',
  'Elm',
  'Washington',
  'Maple',
  'Park',
  'Cedar',
  'Lake',
  'Hill',
  'Pine',
  'Sunset',
  'Broadway',
  'Market',
  'Church',
  'Mill',
  'River',
  'Highland',
  'Spring',
];
export const STREET_SUFFIXES: readonly string[] = ['St', 'Ave', 'Blvd', 'Rd', 'Dr', 'Ln', 'Way'];
