/**
 * The report as one self-contained HTML file: inline CSS, inline SVG charts, no font or
 * image from anywhere else, so it opens offline and can be mailed around. Its one script,
 * inline, sorts the scorecard by a clicked column; without it the page reads the same, in
 * the default order (docs/running.md, "The report").
 */
import { daysBetween } from '../calendar-day.ts';
import {
  accuracyChart,
  CHART_CSS,
  rankChart,
  reviewChart,
  siteColors,
  visibilityChart,
} from './charts.ts';
import { counted, noun } from './counted.ts';
import {
  HEALTH_WEIGHTS,
  type HealthParts,
  PORTFOLIO_ROWS,
  type ReportData,
  type ScorecardRow,
} from './report-data.ts';
import { siteLabel } from './site-names.ts';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

const number = new Intl.NumberFormat('en-US');
const percent = (score: number | null) =>
  score === null ? '–' : `${(Math.round(score * 1000) / 10).toFixed(1)}%`;
/**
 * A duration as a person says it: "5 h", "3 days", "7 weeks", "2.5 years". The sandbox
 * keeps a backlog of unanswered reviews up to 900 days old, so years do occur.
 */
export function hoursText(hours: number | null): string {
  if (hours === null || !Number.isFinite(hours)) return '–';
  const days = hours / 24;
  if (hours < 1) return `${Math.max(0, Math.round(hours * 60))} min`;
  if (hours < 48) return `${Math.round(hours)} h`;
  if (days < 14) return counted(Math.round(days), 'day');
  if (days < 90) return counted(Math.round(days / 7), 'week');
  if (days < 365) return counted(Math.round(days / 30.44), 'month');
  const years = Math.round((days / 365.25) * 10) / 10;
  return counted(years, 'year');
}

/** Only http(s) links become anchors: a stored link must not run script in the report. */
function linkCell(url: string | null): string {
  if (!url) return '–';
  if (!/^https?:\/\//i.test(url)) return escapeHtml(url);
  // The address is cut, never an id: the whole address is the link's target.
  const text = url.length > 40 ? `${url.slice(0, 37)}…` : url;
  return `<a href="${escapeHtml(url)}" rel="noopener noreferrer">${escapeHtml(text)}</a>`;
}

/** The report's style sheet, inlined in its `<head>`. */
export const REPORT_CSS = `
:root { color-scheme: light; --ink: #1d2330; --muted: #5b6475; --line: #e3e7ee; --bg: #f6f7fa; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 28px 24px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 32px 0 8px; }
h3 { font-size: 14px; margin: 0 0 6px; }
h3.more { margin-top: 14px; }
p.sub, .note { color: var(--muted); margin: 0 0 12px; }
.kpis { display: grid; grid-template-columns: repeat(4, 1fr); gap: 10px; margin-top: 18px; }
.kpi { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.kpi b { display: block; font-size: 20px; }
.kpi span { color: var(--muted); font-size: 12px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px; margin-bottom: 12px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(420px, 100%), 1fr)); gap: 10px; }
${CHART_CSS}/* Legends are HTML, laid out by the browser with the widths it draws: no label can run
   into the next item's marker, at any page width (test/report measures every pair). */
ul.legend { display: flex; flex-wrap: wrap; justify-content: center; gap: 4px 16px; list-style: none;
  margin: 4px 0; padding: 0; font-size: 12px; color: var(--muted); }
ul.legend li { display: inline-flex; align-items: center; gap: 6px; white-space: nowrap; }
ul.legend .mark { display: inline-block; flex: none; width: 16px; height: 10px; border-radius: 2px; }
ul.legend .mark.line { height: 3px; border-radius: 0; }
.scroll { overflow-x: auto; }
table { width: 100%; border-collapse: collapse; background: #fff; font-size: 13px; }
th, td { text-align: left; padding: 6px 6px; border-bottom: 1px solid var(--line); vertical-align: top;
  white-space: nowrap; }
th { background: #eef1f6; font-weight: 600; }
/* Free text (keywords, names, review text) is cut with an ellipsis, never wrapped: the
   full text is in the cell's title. Keeps every table inside 1200 px (test/report); the
   widths hold the sandbox's longest keywords and names whole. An id is never cut: a
   business's name is clipped on its own, its id follows in full. */
td.clip { max-width: 20em; overflow: hidden; text-overflow: ellipsis; }
.name { display: inline-block; max-width: 20em; overflow: hidden; text-overflow: ellipsis;
  vertical-align: top; }
.id { color: var(--muted); }
ol.five { margin: 0; padding-left: 22px; }
/* A phone's width wraps an item's "weakest: …" onto its own line, never the page; a long
   name wraps, it is never cut. */
ol.five li { padding: 2px 0; }
ol.five .note { white-space: nowrap; }
ol.five .name { display: inline; max-width: none; overflow: visible; }
ol.five b { font-variant-numeric: tabular-nums; }
th[data-sort] { cursor: pointer; user-select: none; }
th[aria-sort="descending"]::after { content: " ▾"; }
th[aria-sort="ascending"]::after { content: " ▴"; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.bad { color: #b3261e; font-weight: 600; }
.ok { color: #2e7d32; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
@media (max-width: 760px) {
  main { padding: 20px 12px 40px; }
  .kpis { grid-template-columns: repeat(2, 1fr); }
}
/* A phone: each row of a wide table is a block of "label value" lines (the label is the
   column's header, data-label), so no column is off-screen and no id is cut. A sortable
   table keeps its headers, wrapped, to click. */
@media (max-width: 600px) {
  .scroll table, .scroll tbody, .scroll tr, .scroll td { display: block; width: 100%; }
  .scroll thead { display: none; }
  .scroll table.sortable thead { display: block; }
  .scroll table.sortable thead tr { display: flex; flex-wrap: wrap; }
  .scroll tr { border-bottom: 1px solid var(--line); padding: 4px 0; }
  .scroll td { border: 0; padding: 1px 6px; text-align: left; white-space: normal;
    overflow-wrap: anywhere; }
  .scroll td.clip { max-width: none; }
  .scroll .name { display: inline; max-width: none; overflow: visible; }
  /* A label longer than its column ("median time to first response") wraps in it. */
  .scroll td::before { content: attr(data-label); display: inline-block; width: 9.5em;
    padding-right: 6px; white-space: normal; vertical-align: top;
    color: var(--muted); font-weight: 400; }
  .scroll td[data-label=""]::before { display: none; }
  .scroll td.num { text-align: left; }
}
`;

function kpiTiles(data: ReportData): string {
  const k = data.kpis;
  const turned = data.turnedInaccurate.listings;
  const tiles: [value: string, label: string][] = [
    [number.format(k.businesses), noun(k.businesses, 'business')],
    [
      number.format(k.listings),
      `${noun(k.listings, 'listing')} (${number.format(k.inaccurate)} Inaccurate)`,
    ],
    [percent(k.accuracyScore), 'accuracy score now'],
    [number.format(k.keywordsTracked), `${noun(k.keywordsTracked, 'keyword')} tracked`],
    [number.format(turned), `${noun(turned, 'listing')} turned Inaccurate in the window`],
    [number.format(k.reviewsInWindow), `new ${noun(k.reviewsInWindow, 'review')} in the window`],
    [
      k.averageRatingInWindow === null ? '–' : k.averageRatingInWindow.toFixed(2),
      'average rating of the new reviews',
    ],
    [
      number.format(k.unansweredAnswerable),
      `${noun(k.unansweredAnswerable, 'review')} waiting for a response: none yet, and the API can answer ${noun(k.unansweredAnswerable, 'it', 'them')}`,
    ],
  ];
  return `<section class="kpis">${tiles
    .map(
      ([value, label]) =>
        `<div class="kpi"><b>${escapeHtml(value)}</b><span>${escapeHtml(label)}</span></div>`,
    )
    .join('')}</section>`;
}

/** A business's name, cut if long (the full name in its title), and its id, never cut. */
function businessName(name: string | null, id: number): string {
  return `<span class="name" title="${escapeHtml(name ?? '')}">${escapeHtml(name ?? '')}</span> <span class="id">#${id}</span>`;
}

function businessCell(name: string | null, id: number): string {
  return `<td>${businessName(name, id)}</td>`;
}

/**
 * A wide table: it scrolls sideways inside its own box where it does not fit, and on a
 * phone (up to 600 px) each row is a block of "label value" lines, so every column, and
 * every business id, reads without scrolling (test/report measures it at 480 px). Each
 * cell carries its column's header as `data-label` for that layout.
 */
const scrolling = (table: string) => `<div class="scroll">${labelled(table)}</div>`;

/** `table` with each body cell labelled by its column's header text (`data-label`). */
function labelled(table: string): string {
  const head = table.match(/<thead>([\s\S]*?)<\/thead>/)?.[1] ?? '';
  const labels = [...head.matchAll(/<th\b[^>]*>([\s\S]*?)<\/th>/g)].map((m) =>
    (m[1] ?? '').replace(/<[^>]+>/g, '').trim(),
  );
  return table.replace(/<tbody>([\s\S]*?)<\/tbody>/, (_all, body: string) => {
    const rows = body.replace(/<tr\b[^>]*>[\s\S]*?<\/tr>/g, (row) => {
      let n = 0;
      return row.replace(/<td\b/g, () => `<td data-label="${labels[n++] ?? ''}"`);
    });
    return `<tbody>${rows}</tbody>`;
  });
}

/**
 * The scorecard's sorting: a click on a column's header (or Enter on it) sorts by that
 * column, the worse values first (`data-sort`), a second click reverses; rows that tie
 * keep their default order (`data-order`), and an empty value ("–") sorts last. Plain
 * JavaScript, no library: without it the table stays in its default order.
 */
const SORT_SCRIPT = `for (const table of document.querySelectorAll('table.sortable')) {
  const heads = [...table.tHead.rows[0].cells];
  const body = table.tBodies[0];
  for (const th of heads) {
    if (!th.dataset.sort) continue;
    th.tabIndex = 0;
    const sort = () => {
      const current = th.getAttribute('aria-sort');
      const descending = current ? current === 'ascending' : th.dataset.sort === 'desc';
      for (const other of heads) other.removeAttribute('aria-sort');
      th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
      const value = (row) => row.cells[th.cellIndex].dataset.v;
      const rows = [...body.rows].sort((a, b) => {
        const x = value(a);
        const y = value(b);
        const empty = (x === '') - (y === '');
        if (empty || x === '') return empty || a.dataset.order - b.dataset.order;
        const order = th.dataset.type === 'text' ? x.localeCompare(y) : x - y;
        return (descending ? -order : order) || a.dataset.order - b.dataset.order;
      });
      body.append(...rows);
    };
    th.addEventListener('click', sort);
    th.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        sort();
      }
    });
  }
}`;

/** A sortable numeric cell: its value for sorting in `data-v` ("" for none), its text shown. */
function sortCell(value: number | null, text: string, cls = 'num'): string {
  return `<td class="${cls}" data-v="${value ?? ''}">${text}</td>`;
}

const PART_LABELS: Record<keyof HealthParts, string> = {
  accuracy: 'accuracy',
  visibility: 'visibility',
  rating: 'rating',
  waiting: 'reviews waiting',
  response: 'response time',
};

/** The score's parts for its title: "(accuracy 90.0 × 35 + … + response 85.7 × 10) ÷ 100". */
function partsText(parts: HealthParts): string {
  const known = Object.entries(parts).filter(([, points]) => points !== null) as [
    keyof HealthParts,
    number,
  ][];
  const weights = known.reduce((sum, [part]) => sum + HEALTH_WEIGHTS[part], 0);
  return `(${known.map(([part, points]) => `${part} ${points.toFixed(1)} × ${HEALTH_WEIGHTS[part]}`).join(' + ')}) ÷ ${weights}`;
}

/**
 * True when `part` sits at 0 below its floor, where the next step would not lift it: more
 * than ten reviews waiting (answering one still leaves ten or more: 0), a median response
 * slower than a week (docs/warehouse.md, "v_location_scorecard"). Naming such a part as
 * the weakest says nothing the business can act on next.
 */
function stuckAtFloor(part: keyof HealthParts, row: ScorecardRow): boolean {
  if (part === 'waiting') return row.waiting > WAITING_FLOOR;
  if (part === 'response')
    return row.medianHours90d !== null && row.medianHours90d > RESPONSE_FLOOR_HOURS;
  return false;
}
/** Reviews waiting at which the waiting part reaches 0 (100 − 10 × waiting). */
const WAITING_FLOOR = 10;
/** A median response this slow (hours) or slower gives the response part 0. */
const RESPONSE_FLOOR_HOURS = 168;

/**
 * The weakest part that can still move: the component with the fewest points, passing
 * over one stuck at its floor (`stuckAtFloor`), the first in the documented order on a
 * tie. With every part stuck, the one with the fewest points.
 */
function weakestPart(row: ScorecardRow): [label: string, points: number] {
  const parts = row.parts;
  const lowest = (movable: boolean) => {
    let weakest: [keyof HealthParts, number] | undefined;
    for (const part of Object.keys(HEALTH_WEIGHTS) as (keyof HealthParts)[]) {
      const points = parts[part];
      if (points === null || (movable && stuckAtFloor(part, row))) continue;
      if (!weakest || points < weakest[1]) weakest = [part, points];
    }
    return weakest;
  };
  const [part, points] = lowest(true) ?? lowest(false) ?? ['waiting', parts.waiting];
  return [PART_LABELS[part], points];
}

const healthText = (health: number) => health.toFixed(1);

/**
 * The portfolio's five healthiest and five least healthy businesses (`portfolioOf`), each
 * with its score and its weakest part: lists, not tables, above the scorecard.
 */
function portfolioSection(data: ReportData): string {
  const portfolio = data.portfolio;
  if (!portfolio || portfolio.bottom.length + portfolio.top.length < 2) return '';
  const item = (row: ScorecardRow) => {
    const [label, points] = weakestPart(row);
    return `<li data-id="${row.businessId}" data-v="${row.health}">${businessName(row.name, row.businessId)} <b>${healthText(row.health)}</b> <span class="note">weakest: ${label} ${Math.round(points)}/100</span></li>`;
  };
  const list = (id: string, title: string, rows: ScorecardRow[]) =>
    `<div class="card"><h3>${title}</h3><ol class="five" id="${id}">${rows.map(item).join('')}</ol></div>`;
  const total = data.scorecard.length;
  const split =
    total < 2 * PORTFOLIO_ROWS
      ? ` With ${counted(total, 'business')}, the better half and the worse half.`
      : '';
  return `<h2>Top and bottom five by health</h2><p class="sub">The healthiest and the least healthy businesses by health score (the scorecard below), each with its weakest part that can still move (its points of 100; a part at 0 that the next answer would not lift, such as more than ten reviews waiting, is passed over).${split}</p><div class="grid">${list('top-five', 'Top five', portfolio.top)}${list('bottom-five', 'Bottom five', portfolio.bottom)}</div>`;
}

/** "+2.3" or "−1.5" points, green or red; "–" without a value. */
function changeText(change: number | null): string {
  if (change === null) return '–';
  const cls = change > 0 ? 'ok' : change < 0 ? 'bad' : '';
  const text =
    change > 0 ? `+${change.toFixed(1)}` : change < 0 ? `−${(-change).toFixed(1)}` : '0.0';
  return `<span class="${cls}">${text}</span>`;
}

/**
 * The scorecard, one row per business, the least healthy first: `v_location_scorecard`
 * (docs/warehouse.md) and the keywords that moved in the window, with the need that
 * breaks ties. What an agency sends each client.
 */
function scorecardSection(data: ReportData): string {
  const asOf = data.scoredAt.toISOString().slice(0, 10);
  const behind = daysBetween(data.lastDay, asOf);
  const stale =
    behind > 1
      ? ` The data ends on ${data.lastDay}, ${counted(behind, 'day')} before: only the reviews dated since ${new Date(data.scoredAt.getTime() - 90 * 86_400_000).toISOString().slice(0, 10)} count there.`
      : '';
  const head = `<h2>Scorecard</h2><p class="sub">One row per business, the least healthy first, as of ${escapeHtml(asOf)} (the view <code>v_location_scorecard</code>, docs/warehouse.md). <b>Health</b>, 0 to 100, weighs accuracy 35, visibility 25, rating 20, reviews waiting 10 and response time 10, over the parts that have a value; hover a score for its parts. Rating and response time (median, to the first response) are those of the reviews of the 90 days to then.${stale} Visibility is that of the latest ranked day, every site together, and its change from the latest day at least 30 days before. Keywords up (down): the best rank on any search site better (worse) on the last day of this window it was searched than on the first, not ranked below every rank. <b>Need</b> = Inaccurate listings + reviews waiting + keywords down: the things to act on, and the tie-break. Click a column's header to sort by it, the worst first; click again to reverse.</p>`;
  if (!data.scorecard.length) return `${head}<p class="note">No business in the warehouse.</p>`;
  const row = (b: ScorecardRow, n: number) =>
    `<tr data-order="${n}"><td data-v="${escapeHtml(b.name)}">${businessName(b.name, b.businessId)}</td><td class="num" data-v="${b.health}" title="${escapeHtml(partsText(b.parts))}"><b>${healthText(b.health)}</b></td>${sortCell(b.accuracyPct, b.accuracyPct === null ? '–' : `${b.accuracyPct.toFixed(1)}%`)}${sortCell(b.inaccurate, `<span class="${b.inaccurate ? 'bad' : ''}">${number.format(b.inaccurate)}</span> of ${number.format(b.listings)}`)}${sortCell(b.waiting, number.format(b.waiting))}${sortCell(b.avgRating90d, b.avgRating90d === null ? '–' : b.avgRating90d.toFixed(2))}${sortCell(b.medianHours90d, hoursText(b.medianHours90d))}${sortCell(b.visibilityPct, b.visibilityPct === null ? '–' : `${b.visibilityPct.toFixed(1)}%`)}${sortCell(b.visibilityChange30d, changeText(b.visibilityChange30d))}${sortCell(b.keywordsUp, `<span class="${b.keywordsUp ? 'ok' : ''}">${number.format(b.keywordsUp)}</span>`)}${sortCell(b.keywordsDown, `<span class="${b.keywordsDown ? 'bad' : ''}">${number.format(b.keywordsDown)}</span>`)}${sortCell(b.need, number.format(b.need))}</tr>`;
  const th = (label: string, sort: 'asc' | 'desc', title: string, extra = '') =>
    `<th class="num" data-sort="${sort}" title="${escapeHtml(title)}"${extra}>${label}</th>`;
  return `${head}${scrolling(`<table class="sortable" id="scorecard" data-as-of="${data.scoredAt.toISOString()}"><thead><tr><th data-sort="asc" data-type="text">business</th>${th('health', 'asc', 'health score, 0 to 100: hover a score for its parts', ' aria-sort="ascending"')}${th('accuracy', 'asc', 'Accurate ÷ (Accurate + Inaccurate) now')}${th('Inaccurate', 'desc', 'Inaccurate listings now, of the live listings')}${th('waiting', 'desc', 'reviews with no response yet that the API can answer')}${th('rating', 'asc', 'average rating of the reviews of the 90 days')}${th('response', 'desc', 'median time to the first response, reviews of the 90 days')}${th('visibility', 'asc', 'on the latest ranked day, every site together')}${th('30-day change', 'asc', 'visibility change, in points, since the latest day at least 30 days before')}${th('kw up', 'asc', 'keywords up: best rank better at the end of the window than at its start')}${th('kw down', 'desc', 'keywords down: best rank worse at the end of the window than at its start')}${th('need', 'desc', 'Inaccurate listings + reviews waiting + keywords down')}</tr></thead><tbody>${data.scorecard.map(row).join('')}</tbody></table>`)}`;
}

/** Visibility per site over the window: one line per site, every business in scope together. */
function visibilitySection(data: ReportData, color: (site: string) => string): string {
  const head = `<h2>Visibility per site</h2><p class="sub">Visibility per day on each search site, 0 to 100: the clicks its ranks earn on a click-through curve (300 of 1,000 searches at position 1, none past 20) against every keyword first (the view <code>v_visibility_daily</code>, docs/warehouse.md)${data.business ? '' : ', the businesses together, each weighed by its keywords'}. A day not collected is skipped; hover a point for its value.</p>`;
  if (!data.visibility.length)
    return `${head}<p class="note">No rank observations in this window.</p>`;
  return `${head}<div class="card chart">${visibilityChart(data.visibility, data.firstDay, data.lastDay, color)}</div>`;
}

const signed = (n: number | null) => (n === null ? '–' : n > 0 ? `+${n}` : String(n));
const rankText = (rank: number | null) => (rank === null ? 'not ranked' : `#${rank}`);

/**
 * The rank then and the change since, as a person reads it: "#7, up 3" (a loss is a
 * larger rank number). "–" when there is no observation that old.
 */
function changeCell(then: number | null, change: number | null): string {
  if (then === null && change === null) return '<td class="num">–</td>';
  if (change === null) return `<td class="num">${rankText(then)}</td>`;
  const cls = change > 0 ? 'bad' : change < 0 ? 'ok' : '';
  const words = change > 0 ? `down ${change}` : change < 0 ? `up ${-change}` : 'same';
  return `<td class="num" title="rank change ${signed(change)}">${rankText(then)}, <span class="${cls}">${words}</span></td>`;
}

function moversTable(rows: ReportData['declines']): string {
  const body = rows
    .map((m) => {
      const left = m.leftTop3 ? 'left the top 3' : m.leftTop10 ? 'left the top 10' : '';
      return `<tr><td class="clip" title="${escapeHtml(m.keyword)}">${escapeHtml(m.keyword)}</td>${businessCell(m.businessName, m.businessId)}<td>${escapeHtml(siteLabel(m.site))}</td><td class="num">${rankText(m.rank)}</td><td class="num">${m.previousRank === null ? '–' : rankText(m.previousRank)}</td>${changeCell(m.rank7dAgo, m.rankChange7d)}${changeCell(m.rank30dAgo, m.rankChange30d)}<td class="bad">${left}</td></tr>`;
    })
    .join('');
  return `${scrolling(`<table><thead><tr><th>keyword</th><th>business</th><th>site</th><th class="num">rank now</th><th class="num" title="the observation before the latest">before</th><th class="num">7 days ago</th><th class="num">30 days ago</th><th></th></tr></thead><tbody>${body}</tbody></table>`)}`;
}

/** First what got worse (an analyst's to-do list), then what got better. */
function moversSection(data: ReportData): string {
  const head =
    '<h2>Biggest movers</h2><p class="sub">Latest rank per keyword and site, the rank before it, and the rank 7 and 30 days before with the change since. Losses first: keywords that left the top 3 or top 10 since the observation before, then the largest drops.</p>';
  if (!data.declines.length && !data.gains.length) {
    return `${head}<p class="note">No rank moved in this window (a longer history shows 7- and 30-day changes).</p>`;
  }
  const declines = data.declines.length
    ? `<h3>Declines</h3>${moversTable(data.declines)}`
    : '<h3>Declines</h3><p class="note">None.</p>';
  const gains = data.gains.length ? `<h3 class="more">Gains</h3>${moversTable(data.gains)}` : '';
  return head + declines + gains;
}

/**
 * Which businesses are charted, in numbers that add up: those charted, the others with
 * rankings in the window, and those without, make every business of the header.
 */
function chartedText(data: ReportData): string {
  if (data.business) return '';
  const total = data.kpis.businesses;
  const charted = data.ranks.length;
  const others = data.businessesWithRanks - charted;
  const without = total - data.businessesWithRanks;
  const rest =
    others && without
      ? `: ${number.format(others)} with rankings, ${number.format(without)} without rankings in this window`
      : others
        ? ', all with rankings'
        : without
          ? ', none with rankings in this window'
          : '';
  return ` ${number.format(charted)} of the ${counted(total, 'business')} ${noun(charted, 'is', 'are')} charted: those with rankings in this window and the lowest health (the first in the scorecard).${
    total > charted
      ? ` The other ${number.format(total - charted)} ${noun(total - charted, 'is', 'are')} in that table${rest}.`
      : ''
  } <code>--business ID</code> charts any one, with all its keywords.`;
}

function rankSection(data: ReportData, color: (site: string) => string): string {
  const head = `<h2>Keyword rankings</h2><p class="sub">Rank per day on each search site (1 is the top). A gap means searched but not ranked; a day not collected is simply skipped.${chartedText(data)}</p>`;
  if (!data.ranks.length) return `${head}<p class="note">No rank observations in this window.</p>`;
  const parts = data.ranks.map((b) => {
    const charts = b.keywords
      .filter((k) => k.sites.length)
      .map(
        (k) => `<div class="card chart">${rankChart(k, data.firstDay, data.lastDay, color)}</div>`,
      )
      .join('');
    const shown = b.keywords.length;
    const more =
      b.keywordsTracked > shown
        ? ` · ${number.format(shown)} of ${counted(b.keywordsTracked, 'keyword')} shown, biggest losses first (<code>--business ${b.businessId}</code> for all)`
        : '';
    return `<h3>${escapeHtml(b.name)} <span class="note">#${b.businessId}${more}</span></h3><div class="grid">${charts}</div>`;
  });
  return head + parts.join('');
}

function accuracySection(data: ReportData): string {
  const head =
    '<h2>Listing accuracy</h2><p class="sub">Live listings by status at the end of each day; accuracy score = Accurate ÷ (Accurate + Inaccurate), Not Present excluded.</p>';
  if (!data.accuracy.length) return `${head}<p class="note">No listing history in this window.</p>`;
  return `${head}<div class="card chart">${accuracyChart(data.accuracy, data.firstDay, data.lastDay)}</div>`;
}

/**
 * The listings that turned Inaccurate in the window against those Inaccurate now, so that
 * the two figures of the key figures read together: turned = still Inaccurate + not any
 * more; Inaccurate now = still Inaccurate + Inaccurate without an alert in the window.
 */
function turnedText(data: ReportData): string {
  const t = data.turnedInaccurate;
  const notNow = t.listings - t.stillInaccurate;
  const earlier = t.inaccurateNow - t.stillInaccurate;
  const times =
    t.turns > t.listings
      ? ` (${counted(t.turns, 'time')} in all: a listing corrected and wrong again counts once)`
      : '';
  const turned = `${counted(t.listings, 'listing')} turned Inaccurate in this window${times}`;
  if (!t.listings)
    return `No listing turned Inaccurate in this window; ${counted(t.inaccurateNow, 'listing')} ${noun(t.inaccurateNow, 'is', 'are')} Inaccurate now.`;
  return `${turned}: ${number.format(t.stillInaccurate)} of them ${noun(t.stillInaccurate, 'is', 'are')} Inaccurate now and ${number.format(notNow)} ${noun(notNow, 'is', 'are')} not (corrected since, or removed). Of the ${counted(t.inaccurateNow, 'listing')} Inaccurate now, ${number.format(t.stillInaccurate)} turned in this window and ${number.format(earlier)} earlier.`;
}

function newlyInaccurateSection(data: ReportData): string {
  const shown = data.newlyInaccurate.length;
  const head = `<h2>Newly Inaccurate listings</h2><p class="sub">${turnedText(data)}${
    data.turnedInaccurate.listings > shown
      ? ` Below, the latest ${number.format(shown)}`
      : ' Below, each'
  } with its latest turn; what is wrong and the current status are the listing as last synced.</p>`;
  if (!data.newlyInaccurate.length) return `${head}<p class="note">None.</p>`;
  const body = data.newlyInaccurate
    .map(
      (r) => `<tr><td>${r.detectedAt.toISOString().slice(0, 10)}</td>
${businessCell(r.businessName, r.businessId)}
<td>${escapeHtml(r.siteName ? siteLabel(r.siteName) : '')}</td><td>${escapeHtml(r.previousStatus ?? 'first seen')}</td>
<td class="${r.currentStatus === 'Inaccurate' ? 'bad' : 'ok'}">${escapeHtml(r.currentStatus ?? 'removed')}</td>
<td>${escapeHtml(r.wrongFields ?? '–')}</td><td>${linkCell(r.liveLink)}</td></tr>`,
    )
    .join('');
  return `${head}${scrolling(`<table><thead><tr><th>detected</th><th>business</th><th>site</th><th>was</th><th>now</th><th>wrong</th><th>live link</th></tr></thead><tbody>${body}</tbody></table>`)}`;
}

function reviewSection(data: ReportData): string {
  const head =
    '<h2>Reviews</h2><p class="sub">New reviews and responses per day, and the average rating of the day’s new reviews.</p>';
  const chart = data.reviews.length
    ? `<div class="card chart">${reviewChart(data.reviews, data.firstDay, data.lastDay)}</div>`
    : '<p class="note">No reviews in this window.</p>';
  const sla = data.sla.length
    ? `<h3>Awaiting a response</h3><p class="sub">Reviews waiting for a response (none yet, and the API can answer them) by business and site, the most first.</p>${scrolling(
        `<table><thead><tr><th>business</th><th>site</th><th class="num">waiting</th><th class="num">oldest waiting</th><th class="num">median time to first response</th></tr></thead><tbody>${data.sla
          .map(
            (s) =>
              `<tr>${businessCell(s.businessName, s.businessId)}<td>${escapeHtml(siteLabel(s.siteName))}</td><td class="num">${number.format(s.unansweredAnswerable)}</td><td class="num">${hoursText(s.oldestUnansweredAgeHours)}</td><td class="num">${hoursText(s.medianHoursToFirstResponse)}</td></tr>`,
          )
          .join('')}</tbody></table>`,
      )}`
    : '';
  return head + chart + sla + awaitingTable(data);
}

/** The first words of a review, cut at a word boundary: a row stays one line. */
export function firstWords(text: string, max = 40): string {
  const clean = text.trim();
  if (clean.length <= max) return clean;
  const cut = clean.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s.,;:!?-]+$/, '')}…`;
}

/**
 * One row per review without a response, longest waiting and lowest rated first. Those
 * the API can answer are the reviews waiting for a response of the key figures; the rest
 * cannot be answered through it.
 */
function awaitingTable(data: ReportData): string {
  if (!data.awaitingTotal) return '';
  const shown = data.awaiting.length;
  const cannot = data.awaitingTotal - data.awaitingAnswerable;
  const head = `<h3 class="more">Reviews without a response</h3><p class="sub">${counted(data.awaitingTotal, 'review')} ${noun(data.awaitingTotal, 'has', 'have')} no response (none stored, none counted upstream). ${number.format(data.awaitingAnswerable)} of them ${noun(data.awaitingAnswerable, 'is', 'are')} waiting for a response, the key figure: the API can answer ${noun(data.awaitingAnswerable, 'it', 'them')} (<code>listings-sync api reviews respond</code>). The API cannot answer the other ${number.format(cannot)} (a site it does not answer on, no site login, or a response already submitted). ${
    shown < data.awaitingTotal
      ? `Below, the ${number.format(shown)} waiting longest, lowest rated first`
      : 'Below, all of them, longest waiting first'
  }; the query "Reviews waiting for an answer" in docs/warehouse.md lists them all.</p>`;
  const body = data.awaiting
    .map(
      (r) =>
        `<tr><td class="num">${hoursText(r.waitingHours)}</td><td class="num">${r.rating === null ? '–' : `${r.rating}★`}</td><td>${escapeHtml(siteLabel(r.siteName))}</td>${businessCell(r.businessName, r.businessId)}<td>${r.reviewedAt ? r.reviewedAt.toISOString().slice(0, 10) : '–'}</td><td class="clip" title="${escapeHtml(r.excerpt)}">${escapeHtml(firstWords(r.excerpt))}</td><td>${permalinkCell(r.permalink)}</td><td class="${r.canRespond ? 'ok' : ''}">${r.canRespond ? 'yes' : 'no'}</td></tr>`,
    )
    .join('');
  return `${head}${scrolling(`<table><thead><tr><th class="num">waiting</th><th class="num">rating</th><th>site</th><th>business</th><th>reviewed</th><th>text</th><th>link</th><th title="can_respond: answerable through the API">API</th></tr></thead><tbody>${body}</tbody></table>`)}`;
}

/** The permalink as a short "open" anchor (http(s) only), the address in its title. */
function permalinkCell(url: string | null): string {
  if (!url) return '–';
  if (!/^https?:\/\//i.test(url)) return escapeHtml(url);
  return `<a href="${escapeHtml(url)}" title="${escapeHtml(url)}" rel="noopener noreferrer">open</a>`;
}

export function renderReportHtml(data: ReportData): string {
  // A site keeps its colour on every chart of the report.
  const color = siteColors();
  const scope = data.business
    ? `${escapeHtml(data.business.name)} (#${data.business.businessId})`
    : `${counted(data.kpis.accounts, 'account')}, ${counted(data.kpis.businesses, 'business')}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Listings report ${data.firstDay} – ${data.lastDay}</title>
<style>${REPORT_CSS}</style>
</head>
<body>
<main>
<h1>Listings report</h1>
<p class="sub">${scope} · ${data.firstDay} to ${data.lastDay} (${counted(data.days, 'day')})</p>
${kpiTiles(data)}
${portfolioSection(data)}
${scorecardSection(data)}
${visibilitySection(data, color)}
${moversSection(data)}
${rankSection(data, color)}
${accuracySection(data)}
${newlyInaccurateSection(data)}
${reviewSection(data)}
<footer>Generated ${data.generatedAt.toISOString().replace('T', ' ').slice(0, 16)} UTC by listings-sync from the warehouse views (docs/warehouse.md, “Views” and “Local-SEO views”).</footer>
</main>
<script>${SORT_SCRIPT}</script>
</body>
</html>
`;
}
