/**
 * The report's charts, drawn by Apache ECharts' server-side SVG renderer: an SVG string
 * per chart, inlined in the HTML, so the report needs no script and no network to view.
 *
 * Every chart is disposed after rendering (with animation off), or ECharts' timers would
 * keep the process alive.
 */
import * as echarts from 'echarts';
import type { AccuracyDay, KeywordRanks, ReviewDay } from './report-data.ts';

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

export function renderChart(
  option: echarts.EChartsCoreOption,
  width: number,
  height: number,
): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    chart.setOption({ animation: false, textStyle: { fontFamily: FONT }, ...option });
    return chart.renderToSVGString();
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
        itemWidth: 14,
        itemHeight: 8,
        textStyle: { fontSize: 10 },
        data: keyword.sites.map((s) => s.site),
      },
      grid: { left: 36, right: 28, top: 44, bottom: 58 },
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
        name: s.site,
        type: 'line',
        showSymbol: s.points.length <= 2,
        symbolSize: 4,
        connectNulls: false,
        lineStyle: { width: 2 },
        color: siteColor(s.site),
        data: s.points.map((p) => [p.day, p.rank]),
      })),
    },
    480,
    280,
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
export function accuracyChart(days: AccuracyDay[], first: string, last: string): string {
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
          min: 0,
          max: 100,
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
  );
}
