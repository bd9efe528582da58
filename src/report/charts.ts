/**
 * The report's charts, drawn by Apache ECharts' server-side SVG renderer: an SVG string
 * per chart and its legend as an HTML list, inlined in the HTML, so a chart needs no
 * script and no network to view.
 *
 * Every chart is drawn twice, for the page's width and for a phone's (`CHART_SIZES`), and
 * the style sheet (`CHART_CSS`) shows the drawing made for the width its card has: an SVG
 * scales with its box, so one drawing squeezed to a phone would shrink its 10-unit text to
 * about 4.5 px (docs/running.md, "The report").
 *
 * Every chart is disposed after rendering (with animation off), or ECharts' timers would
 * keep the process alive.
 */
import * as echarts from 'echarts';
import { addDays } from '../calendar-day.ts';
import { counted } from './counted.ts';
import type { AccuracyDay, KeywordRanks, ReviewDay, SiteVisibility } from './report-data.ts';
import { siteLabel } from './site-names.ts';

const FONT = 'system-ui, -apple-system, Segoe UI, Roboto, sans-serif';
const COLORS = {
  accurate: '#2e9e5b',
  inaccurate: '#d64545',
  notPresent: '#b8c0cc',
  score: '#1f4e8c',
  reviews: '#6c8ebf',
  rating: '#e0a100',
  responses: '#8e6cbf',
};
/** Sites keep their colour across every rank chart of a report. */
const SITE_PALETTE = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf',
  '#bcbd22',
  '#7f7f7f',
];

/** A point to hover: its series, its data value, and the text the browser shows. */
export interface HoverPoint {
  seriesIndex: number;
  value: [string, number];
  title: string;
}

function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Render a chart to SVG. Hover values need no script: each point gets a transparent
 * circle holding an SVG `<title>`, which every browser shows as a tooltip.
 */
export function renderChart(
  option: echarts.EChartsCoreOption,
  width: number,
  height: number,
  hover: HoverPoint[] = [],
  className = '',
): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    chart.setOption({ animation: false, textStyle: { fontFamily: FONT }, ...option });
    // ECharts measures the text in FONT and writes it on every text; the style sheet sets
    // it once for every chart (CHART_CSS), which keeps two drawings per chart smaller.
    const svg = chart
      .renderToSVGString()
      .replaceAll(`font-family:${FONT};`, '')
      .replace(/^<svg /, className ? `<svg class="${className}" ` : '<svg ');
    const targets = hover
      .map((point) => {
        const at = chart.convertToPixel({ seriesIndex: point.seriesIndex }, point.value) as
          | number[]
          | undefined;
        if (!at || !Number.isFinite(at[0]) || !Number.isFinite(at[1])) return '';
        return `<circle cx="${(at[0] ?? 0).toFixed(1)}" cy="${(at[1] ?? 0).toFixed(1)}" r="6" fill="transparent" pointer-events="all"><title>${escapeXml(point.title)}</title></circle>`;
      })
      .join('');
    if (!targets) return svg;
    const end = svg.lastIndexOf('</svg>');
    return `${svg.slice(0, end)}<g class="hover">${targets}</g>${svg.slice(end)}`;
  } finally {
    chart.dispose();
  }
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** Every day from `first` to `last`, both included. */
export function windowDays(first: string, last: string): string[] {
  const days: string[] = [];
  for (let day = first; day <= last; day = addDays(day, 1)) days.push(day);
  return days;
}

/** "Nov 22"; with the year ("Nov 22, 2026") when the window is longer than a year, where "Nov 22" would come twice. */
export function dayLabel(day: string, withYear: boolean): string {
  const month = MONTHS[Number(day.slice(5, 7)) - 1] ?? '?';
  const label = `${month} ${Number(day.slice(8, 10))}`;
  return withYear ? `${label}, ${day.slice(0, 4)}` : label;
}

/**
 * The day axis: one category per day of the window, so a day is one slot whatever the
 * window's length (a time axis splits a one-day window into hours and prints its date at
 * each). A label every `step` days, `step` chosen so that labels fit the plot's width:
 * each label is a different day.
 */
export function dayAxis(first: string, last: string, plotWidth: number, fontSize = 10) {
  const days = windowDays(first, last);
  const withYear = days.length > 365;
  // Room per label at 10 px type: "Nov 22" is about 36 px wide, "Nov 22, 2026" about
  // 66 px, and a gap of at least 16 px between neighbours; larger type, more room.
  const slot = Math.ceil(((withYear ? 82 : 52) * fontSize) / 10);
  const fit = Math.max(1, Math.floor(plotWidth / slot));
  const interval = Math.ceil(days.length / fit) - 1;
  return {
    type: 'category' as const,
    data: days,
    boundaryGap: true,
    axisTick: { alignWithLabel: true, interval },
    axisLabel: {
      interval,
      fontSize,
      formatter: (day: string) => dayLabel(day, withYear),
    },
    splitLine: { show: false },
  };
}

/** A legend entry: the series' colour, drawn as a short line or a bar swatch. */
export interface LegendItem {
  label: string;
  color: string;
  mark: 'line' | 'bar';
}

/**
 * The legend as HTML beside the chart's SVG, not ECharts' own: ECharts places legend
 * items by its own estimate of text widths, and where the browser's font is wider the
 * text runs into the next item's marker. The browser lays out an HTML list with the
 * widths it draws, and wraps it at any page width.
 */
export function legendHtml(items: readonly LegendItem[]): string {
  return `<ul class="legend">${items
    .map(
      (item) =>
        `<li><i class="mark ${item.mark}" style="background:${escapeXml(item.color)}"></i><span>${escapeXml(item.label)}</span></li>`,
    )
    .join('')}</ul>`;
}

/** One drawing of a chart: its size in SVG units, its text's size, and its plot's margins. */
export interface ChartSize {
  width: number;
  height: number;
  /** Axis labels and names, in SVG units. */
  font: number;
  grid: { left: number; right: number; top: number; bottom: number };
}

/**
 * The two drawings of each kind of chart. `wide` is shown while the chart's card is at
 * least `wide.width` CSS px wide, so that its units never shrink below a pixel: the
 * page-wide charts (visibility, accuracy, reviews) from about 1034 px of window, the rank
 * charts two to a row from about 1070 px. `narrow`, 340 units with 11-unit text, is shown
 * below: its text is 10 px or more in a card of 310 px or more (a window of 360 px), and
 * the drawing grows no wider than `NARROW_MAX` px. A phone has no hover, so the narrow
 * drawing carries no hover targets.
 */
export const CHART_SIZES = {
  page: {
    wide: { width: 960, height: 280, font: 10, grid: { left: 48, right: 52, top: 26, bottom: 28 } },
    narrow: {
      width: 340,
      height: 234,
      font: 11,
      grid: { left: 40, right: 46, top: 30, bottom: 28 },
    },
  },
  rank: {
    // 178 units of plot between the title and the day labels.
    wide: { width: 480, height: 248, font: 10, grid: { left: 36, right: 28, top: 44, bottom: 26 } },
    narrow: {
      width: 340,
      height: 220,
      font: 11,
      grid: { left: 34, right: 22, top: 48, bottom: 28 },
    },
  },
} as const satisfies Record<string, { wide: ChartSize; narrow: ChartSize }>;

/** The narrow drawing's widest, in CSS px: a window between a phone's and the wide drawing's. */
const NARROW_MAX = 560;

/**
 * The charts' part of the report's style sheet: each card is a size container, and shows
 * the drawing made for its width (`CHART_SIZES`).
 */
export const CHART_CSS = `
.chart { container-type: inline-size; }
.chart svg { display: block; width: 100%; height: auto; }
.chart svg text { font-family: ${FONT}; }
.chart svg.narrow { display: none; max-width: ${NARROW_MAX}px; margin: 0 auto; }
${[...new Set(Object.values(CHART_SIZES).map((s) => s.wide.width))]
  .map(
    (width) =>
      `@container (width < ${width}px) {
  .chart svg.wide.w${width} { display: none; }
  .chart svg.narrow.w${width} { display: block; }
}`,
  )
  .join('\n')}
`;

/**
 * A chart in both its drawings (`CHART_SIZES`): `draw` gives the ECharts option for a
 * size, and `hover` the wide drawing's hover points.
 */
function drawnTwice(
  sizes: { wide: ChartSize; narrow: ChartSize },
  draw: (size: ChartSize) => echarts.EChartsCoreOption,
  hover: HoverPoint[],
): string {
  const { wide, narrow } = sizes;
  return (
    renderChart(draw(wide), wide.width, wide.height, hover, `wide w${wide.width}`) +
    renderChart(draw(narrow), narrow.width, narrow.height, [], `narrow w${wide.width}`)
  );
}

/** Every day of the window on the x axis, labelled to fit the plot of `size`. */
function sizedDayAxis(first: string, last: string, size: ChartSize) {
  return dayAxis(first, last, size.width - size.grid.left - size.grid.right, size.font);
}

/**
 * One keyword: a line per site, rank 1 at the top. A day searched but not ranked is a
 * gap in the line; a day not collected has no point, and the line joins its neighbours.
 */
export function rankChart(
  keyword: KeywordRanks,
  first: string,
  last: string,
  siteColor: (site: string) => string,
): string {
  const ranks = keyword.sites.flatMap((s) => s.points.map((p) => p.rank ?? 0));
  // A round bottom for the axis: the worst rank shown, up to the next multiple of 5.
  const worst = Math.ceil(Math.max(10, ...ranks) / 5) * 5;
  return (
    drawnTwice(
      CHART_SIZES.rank,
      (size) => ({
        title: {
          text: keyword.keyword,
          subtext:
            keyword.sitesTracked > keyword.sites.length
              ? `best ${keyword.sites.length} of ${keyword.sitesTracked} sites`
              : '',
          left: 4,
          top: 0,
          itemGap: 2,
          textStyle: { fontSize: 13 },
          subtextStyle: { fontSize: size.font },
        },
        grid: size.grid,
        xAxis: sizedDayAxis(first, last, size),
        yAxis: {
          type: 'value',
          inverse: true,
          min: 1,
          max: worst,
          minInterval: 1,
          axisLabel: { fontSize: size.font },
        },
        series: keyword.sites.map((s) => ({
          name: siteLabel(s.site),
          type: 'line',
          showSymbol: s.points.length <= 2,
          symbolSize: 4,
          connectNulls: false,
          lineStyle: { width: 2 },
          color: siteColor(s.site),
          data: s.points.map((p) => [p.day, p.rank]),
        })),
      }),
      keyword.sites.flatMap((s, seriesIndex) =>
        s.points
          .filter((p) => p.rank !== null)
          .map((p) => ({
            seriesIndex,
            value: [p.day, p.rank as number] as [string, number],
            title: `${keyword.keyword} · ${siteLabel(s.site)} · ${p.day}: rank ${p.rank}`,
          })),
      ),
    ) +
    legendHtml(
      keyword.sites.map((s) => ({
        label: siteLabel(s.site),
        color: siteColor(s.site),
        mark: 'line',
      })),
    )
  );
}

export function siteColors(): (site: string) => string {
  const assigned = new Map<string, string>();
  return (site) => {
    let color = assigned.get(site);
    if (!color) {
      color = SITE_PALETTE[assigned.size % SITE_PALETTE.length] ?? '#555';
      assigned.set(site, color);
    }
    return color;
  };
}

/**
 * The accuracy axis around the data, not 0-100 %: a score that moves between 82 % and
 * 86 % must show its movement. Five points of margin, rounded to multiples of 5.
 */
export function accuracyAxisRange(days: readonly AccuracyDay[]): { min: number; max: number } {
  const scores = days
    .map((d) => d.accuracyScore)
    .filter((score): score is number => score !== null)
    .map((score) => score * 100);
  if (!scores.length) return { min: 0, max: 100 };
  const min = Math.max(0, Math.floor((Math.min(...scores) - 5) / 5) * 5);
  const max = Math.min(100, Math.ceil((Math.max(...scores) + 5) / 5) * 5);
  return { min, max };
}

/**
 * A round step for the accuracy axis that divides its range in six steps or fewer; a
 * range no such step divides (65 points) takes a multiple of 5, and its last step is
 * shorter.
 */
export function accuracyAxisStep(range: { min: number; max: number }): number {
  const span = range.max - range.min;
  return (
    [5, 10, 20, 25, 50].find((step) => span % step === 0 && span / step <= 6) ??
    5 * Math.ceil(span / 30)
  );
}

/** Listings by status per day (stacked bars) and the accuracy score (line, right axis). */
export function accuracyChart(days: AccuracyDay[], first: string, last: string): string {
  const range = accuracyAxisRange(days);
  const bar = (name: string, color: string, pick: (d: AccuracyDay) => number) => ({
    name,
    type: 'bar',
    stack: 'status',
    color,
    barMaxWidth: 18,
    data: days.map((d) => [d.day, pick(d)]),
  });
  return countsAndLineChart(first, last, {
    legend: [
      { label: 'Accurate', color: COLORS.accurate, mark: 'bar' },
      { label: 'Inaccurate', color: COLORS.inaccurate, mark: 'bar' },
      { label: 'Not Present', color: COLORS.notPresent, mark: 'bar' },
      { label: 'Accuracy score', color: COLORS.score, mark: 'line' },
    ],
    countAxis: 'listings',
    lineAxis: {
      name: 'accuracy',
      min: range.min,
      max: range.max,
      // Its own round steps, not ticks aligned with the counts' (82%, 85%, …), which the
      // narrow drawing's height would put closer than their text is tall.
      interval: accuracyAxisStep(range),
      axisLabel: { formatter: '{value}%' },
    },
    series: [
      bar('Accurate', COLORS.accurate, (d) => d.accurate),
      bar('Inaccurate', COLORS.inaccurate, (d) => d.inaccurate),
      bar('Not Present', COLORS.notPresent, (d) => d.notPresent),
      {
        name: 'Accuracy score',
        type: 'line',
        yAxisIndex: 1,
        color: COLORS.score,
        showSymbol: false,
        lineStyle: { width: 2.5 },
        data: days.map((d) => [
          d.day,
          d.accuracyScore === null ? null : Math.round(d.accuracyScore * 1000) / 10,
        ]),
      },
    ],
    hover: days
      .filter((d) => d.accuracyScore !== null)
      .map((d) => ({
        seriesIndex: 3,
        value: [d.day, Math.round((d.accuracyScore as number) * 1000) / 10] as [string, number],
        title: `${d.day}: accuracy ${(Math.round((d.accuracyScore as number) * 1000) / 10).toFixed(1)}% (${d.accurate} Accurate, ${d.inaccurate} Inaccurate, ${d.notPresent} Not Present)`,
      })),
  });
}

/** New reviews and responses per day (bars) and the day's average rating (line, right axis). */
export function reviewChart(days: ReviewDay[], first: string, last: string): string {
  return countsAndLineChart(first, last, {
    legend: [
      { label: 'New reviews', color: COLORS.reviews, mark: 'bar' },
      { label: 'Responses', color: COLORS.responses, mark: 'bar' },
      { label: 'Average rating', color: COLORS.rating, mark: 'line' },
    ],
    countAxis: 'per day',
    lineAxis: { name: 'rating', min: 1, max: 5 },
    series: [
      {
        name: 'New reviews',
        type: 'bar',
        color: COLORS.reviews,
        barMaxWidth: 14,
        data: days.map((d) => [d.day, d.newReviews]),
      },
      {
        name: 'Responses',
        type: 'bar',
        color: COLORS.responses,
        barMaxWidth: 14,
        data: days.map((d) => [d.day, d.responses]),
      },
      {
        name: 'Average rating',
        type: 'line',
        yAxisIndex: 1,
        color: COLORS.rating,
        symbolSize: 5,
        connectNulls: false,
        data: days.map((d) => [d.day, d.averageRating]),
      },
    ],
    hover: days.map((d) => ({
      seriesIndex: 0,
      value: [d.day, d.newReviews] as [string, number],
      title: `${d.day}: ${counted(d.newReviews, 'new review')}, ${counted(d.responses, 'response')}${d.averageRating === null ? '' : `, average rating ${d.averageRating}`}`,
    })),
  });
}

/**
 * A wide chart over the window's days: counts per day on the left axis (bars), and one
 * line on its own axis to the right (`lineAxis`: its name and range), under its legend.
 */
function countsAndLineChart(
  first: string,
  last: string,
  chart: {
    legend: readonly LegendItem[];
    countAxis: string;
    lineAxis: {
      name: string;
      min: number;
      max: number;
      interval?: number;
      axisLabel?: { formatter: string };
    };
    series: unknown[];
    hover: HoverPoint[];
  },
): string {
  const svg = drawnTwice(
    CHART_SIZES.page,
    (size) => ({
      grid: size.grid,
      xAxis: sizedDayAxis(first, last, size),
      yAxis: [
        {
          type: 'value',
          name: chart.countAxis,
          nameTextStyle: { fontSize: size.font },
          minInterval: 1,
          axisLabel: { fontSize: size.font },
        },
        {
          type: 'value',
          nameTextStyle: { fontSize: size.font },
          ...chart.lineAxis,
          // A last step shorter than the others would put two labels on each other.
          axisLabel: { fontSize: size.font, hideOverlap: true, ...chart.lineAxis.axisLabel },
          splitLine: { show: false },
        },
      ],
      series: chart.series,
    }),
    chart.hover,
  );
  return legendHtml(chart.legend) + svg;
}

/**
 * The visibility axis: 0 up to a round ceiling above the data (a multiple of 10), so lines
 * between 5 and 30 use the chart's height; 100 at most.
 */
export function visibilityAxisMax(sites: readonly SiteVisibility[]): number {
  const highest = Math.max(0, ...sites.flatMap((s) => s.points.map((p) => p.visibility)));
  return Math.min(100, Math.max(10, Math.ceil((highest + 1) / 10) * 10));
}

/**
 * Visibility per site over the window (docs/warehouse.md, "v_visibility_daily"): one line
 * per site, 0 to 100; a day not collected has no point and the line joins its neighbours.
 * The legend, in HTML above the chart, lists the sites in the order given.
 */
export function visibilityChart(
  sites: readonly SiteVisibility[],
  first: string,
  last: string,
  siteColor: (site: string) => string,
): string {
  const legend = legendHtml(
    sites.map((s) => ({ label: siteLabel(s.site), color: siteColor(s.site), mark: 'line' })),
  );
  const svg = drawnTwice(
    CHART_SIZES.page,
    (size) => ({
      grid: size.grid,
      xAxis: sizedDayAxis(first, last, size),
      yAxis: {
        type: 'value',
        name: 'visibility',
        nameTextStyle: { fontSize: size.font },
        min: 0,
        max: visibilityAxisMax(sites),
        axisLabel: { formatter: '{value}%', fontSize: size.font },
      },
      series: sites.map((s) => ({
        name: siteLabel(s.site),
        type: 'line',
        color: siteColor(s.site),
        showSymbol: s.points.length <= 2,
        symbolSize: 4,
        lineStyle: { width: 2 },
        data: s.points.map((p) => [p.day, p.visibility]),
      })),
    }),
    sites.flatMap((s, seriesIndex) =>
      s.points.map((p) => ({
        seriesIndex,
        value: [p.day, p.visibility] as [string, number],
        title: `${siteLabel(s.site)} · ${p.day}: visibility ${p.visibility.toFixed(2)}% (${counted(p.keywords, 'keyword')})`,
      })),
    ),
  );
  return legend + svg;
}
