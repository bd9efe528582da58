/**
 * The report's charts, drawn by Apache ECharts' server-side SVG renderer: an SVG string
 * per chart, inlined in the HTML, so the report needs no script and no network to view.
 *
 * Every chart is disposed after rendering (with animation off), or ECharts' timers would
 * keep the process alive.
 */
import * as echarts from 'echarts';
import type { AccuracyDay, KeywordRanks, ReviewDay } from './report-data.ts';
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
): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    chart.setOption({ animation: false, textStyle: { fontFamily: FONT }, ...option });
    const svg = chart.renderToSVGString();
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

const dayAxis = (first: string, last: string) => ({
  type: 'time' as const,
  min: first,
  max: last,
  splitNumber: 5,
  axisLabel: { hideOverlap: true, fontSize: 10, formatter: '{MMM} {d}' },
  splitLine: { show: false },
});

const RANK_CHART_WIDTH = 480;
const LEGEND_FONT_SIZE = 10;
const LEGEND_ICON_WIDTH = 14;
/** ECharts' defaults: icon to text, and between items. */
const LEGEND_TEXT_GAP = 5;
const LEGEND_ITEM_GAP = 10;
/** A line of legend text (10 px type). */
const LEGEND_ROW_HEIGHT = 16;

/**
 * How many lines ECharts' horizontal legend takes for these labels in `width` pixels: it
 * wraps items that do not fit, and a chart that reserved one line would draw the second
 * over the day axis. Widths are estimated at 0.62 em a character, wider than system-ui's
 * average, so the estimate errs towards a line too many, never one too few.
 */
export function legendRows(labels: readonly string[], width: number): number {
  const available = width - 10; // ECharts' legend padding: 5 px each side
  let rows = 1;
  let used = 0;
  for (const label of labels) {
    const item =
      LEGEND_ICON_WIDTH + LEGEND_TEXT_GAP + Math.ceil(label.length * LEGEND_FONT_SIZE * 0.62);
    const next = used === 0 ? item : used + LEGEND_ITEM_GAP + item;
    if (next > available && used > 0) {
      rows++;
      used = item;
    } else used = next;
  }
  return rows;
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
  const labels = keyword.sites.map((s) => siteLabel(s.site));
  // The legend's extra lines grow the chart downwards; the plot keeps its height.
  const extra = (legendRows(labels, RANK_CHART_WIDTH) - 1) * LEGEND_ROW_HEIGHT;
  return renderChart(
    {
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
        subtextStyle: { fontSize: 10 },
      },
      legend: {
        bottom: 0,
        itemWidth: LEGEND_ICON_WIDTH,
        itemHeight: 8,
        itemGap: LEGEND_ITEM_GAP,
        textStyle: { fontSize: LEGEND_FONT_SIZE },
        data: labels,
      },
      grid: { left: 36, right: 28, top: 44, bottom: 58 + extra },
      xAxis: dayAxis(first, last),
      yAxis: {
        type: 'value',
        inverse: true,
        min: 1,
        max: worst,
        minInterval: 1,
        axisLabel: { fontSize: 10 },
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
    },
    RANK_CHART_WIDTH,
    280 + extra,
    keyword.sites.flatMap((s, seriesIndex) =>
      s.points
        .filter((p) => p.rank !== null)
        .map((p) => ({
          seriesIndex,
          value: [p.day, p.rank as number] as [string, number],
          title: `${keyword.keyword} · ${siteLabel(s.site)} · ${p.day}: rank ${p.rank}`,
        })),
    ),
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

/** Listings by status per day (stacked bars) and the accuracy score (line, right axis). */
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
  return renderChart(
    {
      legend: { top: 0, textStyle: { fontSize: 11 } },
      grid: { left: 48, right: 52, top: 34, bottom: 28 },
      xAxis: dayAxis(first, last),
      yAxis: [
        { type: 'value', name: 'listings', nameTextStyle: { fontSize: 10 }, minInterval: 1 },
        {
          type: 'value',
          name: 'accuracy',
          nameTextStyle: { fontSize: 10 },
          min: range.min,
          max: range.max,
          axisLabel: { formatter: '{value}%' },
          splitLine: { show: false },
        },
      ],
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
    },
    960,
    300,
    days
      .filter((d) => d.accuracyScore !== null)
      .map((d) => ({
        seriesIndex: 3,
        value: [d.day, Math.round((d.accuracyScore as number) * 1000) / 10] as [string, number],
        title: `${d.day}: accuracy ${(Math.round((d.accuracyScore as number) * 1000) / 10).toFixed(1)}% (${d.accurate} Accurate, ${d.inaccurate} Inaccurate, ${d.notPresent} Not Present)`,
      })),
  );
}

/** New reviews and responses per day (bars) and the day's average rating (line, right axis). */
export function reviewChart(days: ReviewDay[], first: string, last: string): string {
  return renderChart(
    {
      legend: { top: 0, textStyle: { fontSize: 11 } },
      grid: { left: 48, right: 52, top: 34, bottom: 28 },
      xAxis: dayAxis(first, last),
      yAxis: [
        { type: 'value', name: 'per day', nameTextStyle: { fontSize: 10 }, minInterval: 1 },
        {
          type: 'value',
          name: 'rating',
          nameTextStyle: { fontSize: 10 },
          min: 1,
          max: 5,
          splitLine: { show: false },
        },
      ],
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
    },
    960,
    300,
    days.map((d) => ({
      seriesIndex: 0,
      value: [d.day, d.newReviews] as [string, number],
      title: `${d.day}: ${d.newReviews} new review(s), ${d.responses} response(s)${d.averageRating === null ? '' : `, average rating ${d.averageRating}`}`,
    })),
  );
}
