/**
 * Create and update validation (operations 4 and 5), with the seed's exact messages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { call, validBusiness } from './http.ts';

let sandbox: RunningSandbox;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, seed: 3, businessesPerAccount: 3 });
});
afterAll(async () => {
  await sandbox.close();
});

const create = async (business: Record<string, unknown>) =>
  call(sandbox.credentials[0]!, 'POST', '/businesses', { body: { business } });
const update = async (id: number, business: unknown) =>
  call(sandbox.credentials[0]!, 'PUT', `/businesses/${id}`, { body: { business } });

function without(key: string): Record<string, unknown> {
  const business = validBusiness();
  delete business[key];
  return business;
}

const week = (
  spec: unknown,
  days = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'],
) => ({
  days: Object.fromEntries(days.map((d) => [d, spec])),
});

describe('create (operation 4)', () => {
  it('accepts a valid business', async () => {
    const answer = await create(validBusiness());
    expect(answer.status).toBe(200);
    expect(answer.json.success).toBe(true);
  });

  it.each([
    ['name', "The business was not created. Name can't be blank."],
    ['street', "The business was not created. Street can't be blank."],
    ['city', "The business was not created. City can't be blank."],
    ['state_id', "The business was not created. State can't be blank."],
    ['country_id', "The business was not created. Country can't be blank."],
    ['postal_code', "The business was not created. Postal code can't be blank."],
    ['phone', "The business was not created. Phone can't be blank."],
    ['sub_category_id', "The business was not created. Sub Category can't be blank."],
    ['description', "The business was not created. Description can't be blank."],
  ])('requires %s', async (key, message) => {
    const answer = await create(without(key));
    expect(answer.status).toBe(422);
    expect(answer.json).toEqual({ success: false, message });
  });

  it.each([
    [{ state_id: 9999 }, "The business was not created. State can't be blank."],
    [{ state_id: 52 }, "The business was not created. State can't be blank."],
    [{ sub_category_id: 9999 }, "The business was not created. Sub Category can't be blank."],
    [{ sub_category_id: 14 }, "The business was not created. Sub Category can't be blank."],
    [{ name: 'A' }, 'The business was not created. Name is too short (minimum is 2 characters).'],
    [{ phone: '5125550199' }, 'The business was not created. Phone is invalid.'],
    [{ phone: '(512) 555-0199' }, 'The business was not created. Phone is invalid.'],
    [
      { description: 'x'.repeat(199) },
      'The business was not created. Description is too short (minimum is 200 characters).',
    ],
    [
      { description: 'x'.repeat(1025) },
      'The business was not created. Description is too long (maximum is 1024 characters).',
    ],
    [
      { tagline: 't'.repeat(256) },
      'The business was not created. Tagline is too long (maximum is 255 characters).',
    ],
    [
      { additional_info: 'i'.repeat(1025) },
      'The business was not created. Additional info is too long (maximum is 1024 characters).',
    ],
    [
      { additional_categories: ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10'] },
      'The business was not created. Additional categories is too long (maximum is 9 categories).',
    ],
    [
      { name: 'A', phone: 'bad' },
      'The business was not created. Name is too short (minimum is 2 characters). Phone is invalid.',
    ],
    [
      { payment_methods_attributes: [{ name: 'Bitcoin', is_accepted: true }] },
      'The business was not created. Payment methods name is not included in the list.',
    ],
  ])('refuses %j', async (overrides, message) => {
    const answer = await create(validBusiness(overrides));
    expect(answer.json).toEqual({ success: false, message });
  });

  it('accepts the limits exactly', async () => {
    const answer = await create(
      validBusiness({
        name: 'AB',
        description: 'd'.repeat(200),
        tagline: 't'.repeat(255),
        additional_info: 'i'.repeat(1024),
        additional_categories: ['1', '2', '3', '4', '5', '6', '7', '8', '9'],
        payment_methods_attributes: [
          { name: 'Visa', is_accepted: true },
          { name: 'Cash', is_accepted: false },
        ],
        location_photos_attributes: [{ photo: 'https://img.example/1.jpg' }],
        video_attributes: [{ link: 'https://video.example/1' }],
        videos_attributes: [{ link: 'https://video.example/2' }],
        hide_address: true,
      }),
    );
    expect(answer.json.success).toBe(true);
    expect(answer.json.result.hide_address).toBe(true);
    expect((await create(validBusiness({ description: 'd'.repeat(1024) }))).json.success).toBe(
      true,
    );
  });

  it('accepts hours for all seven days or none, in every time form', async () => {
    const open = (start: string, end: string) => ({ type: 'open', slots: [{ start, end }] });
    for (const spec of [
      open('09:00am', '05:00pm'),
      open('09:00 am', '05:00 pm'),
      open('0900', '1730'),
    ]) {
      const answer = await create(validBusiness({ biz_hours: week(spec) }));
      expect(answer.json.success, JSON.stringify(spec)).toBe(true);
    }
    const mixed = week(open('08:00am', '06:00pm'));
    mixed.days.Saturday = {
      type: 'split',
      slots: [
        { start: '09:00am', end: '12:00pm' },
        { start: '01:00pm', end: '04:00pm' },
      ],
    };
    mixed.days.Sunday = { type: 'closed' } as never;
    (mixed.days as Record<string, unknown>).Friday = { type: '24h' };
    const created = await create(validBusiness({ biz_hours: mixed }));
    expect(created.json.success).toBe(true);
    const full = await call(
      sandbox.credentials[0]!,
      'GET',
      `/businesses/${created.json.result.id}`,
      { query: { type: 'all' } },
    );
    const hours = full.json.result.business_hours;
    expect(hours[0]).toEqual({ day: 'Monday', start_time: '08:00', end_time: '18:00' });
    expect(hours[5]).toEqual({ day: 'Saturday', start_time: '09:00', end_time: '16:00' });
    expect(hours[6]).toEqual({ day: 'Sunday', start_time: null, end_time: null });
    expect((await create(validBusiness({ biz_hours: { days: {} } }))).json.success).toBe(true);
  });

  it('refuses hours with the seed messages', async () => {
    const open = (start: string, end: string) => ({ type: 'open', slots: [{ start, end }] });
    const cases: Array<[unknown, string]> = [
      [
        week(open('09:00am', '05:00pm'), ['Monday', 'Tuesday']),
        'The business was not created. Operating hours should include all days of the week.',
      ],
      [
        week(open('', '05:00pm')),
        'The business was not created. Please specify valid operating hours for each day of the week.',
      ],
      [
        week({ type: 'open', slots: [] }),
        'The business was not created. Please specify valid operating hours for each day of the week.',
      ],
      [
        week({ type: 'split', slots: [{ start: '09:00am', end: '12:00pm' }] }),
        'The business was not created. Please specify valid operating hours for each day of the week.',
      ],
      [
        week(open('9am', '5pm')),
        "The business was not created. Operating hours should be in 12 hours format and no trailing spaces. eg '09:00am'.",
      ],
      [
        week(open('09:00am ', '05:00pm')),
        "The business was not created. Operating hours should be in 12 hours format and no trailing spaces. eg '09:00am'.",
      ],
      [
        week(open('13:00pm', '05:00pm')),
        "The business was not created. Operating hours should be in 12 hours format and no trailing spaces. eg '09:00am'.",
      ],
    ];
    for (const [bizHours, message] of cases) {
      const answer = await create(validBusiness({ biz_hours: bizHours }));
      expect(answer.json, JSON.stringify(bizHours)).toEqual({ success: false, message });
    }
  });

  it('accepts the deprecated hours array under both spellings', async () => {
    const days = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
    const old = days.map((day) =>
      day === 'Sunday'
        ? { day, holiday: true }
        : { day, holiday: false, start_time: '09:00am', end_time: '05:00pm' },
    );
    for (const key of ['location_biz_hours_attributes', 'location_biz_hour_attributes']) {
      const answer = await create(validBusiness({ [key]: old }));
      expect(answer.json.success, key).toBe(true);
      const short = await create(validBusiness({ [key]: old.slice(0, 3) }));
      expect(short.json.message).toBe(
        'The business was not created. Operating hours should include all days of the week.',
      );
    }
  });
});

describe('update (operation 5)', () => {
  it('validates only the fields it is given, without the 200-character minimum', async () => {
    const id = (await create(validBusiness())).json.result.id;
    const answer = await update(id, {
      name: 'Updated Name',
      phone: '512-555-0111',
      description: 'short now',
    });
    expect(answer.json.success).toBe(true);
    expect(answer.json.result).toMatchObject({ name: 'Updated Name', phone: '512-555-0111' });
    expect((await update(id, { phone: '555' })).json.message).toBe(
      'The business was not created. Phone is invalid.',
    );
    expect((await update(id, { state_id: 0 })).json.message).toBe(
      "The business was not created. State can't be blank.",
    );
    expect((await update(id, { sub_category_id: 0 })).json.message).toBe(
      "The business was not created. Sub Category can't be blank.",
    );
    expect((await update(id, { name: 'x' })).json.message).toBe(
      'The business was not created. Name is too short (minimum is 2 characters).',
    );
    expect((await update(id, { description: 'd'.repeat(1025) })).json.message).toBe(
      'The business was not created. Description is too long (maximum is 1024 characters).',
    );
  });

  it('takes hours in the update sample form (a space before am/pm) and merges them', async () => {
    const id = (await create(validBusiness())).json.result.id;
    const answer = await update(id, {
      biz_hours: {
        days: { Monday: { type: 'open', slots: [{ start: '10:00 am', end: '04:00 pm' }] } },
      },
    });
    expect(answer.json.success).toBe(true);
    const full = await call(sandbox.credentials[0]!, 'GET', `/businesses/${id}`, {
      query: { type: 'all' },
    });
    expect(full.json.result.business_hours).toEqual([
      { day: 'Monday', start_time: '10:00', end_time: '16:00' },
    ]);
  });
});
