/**
 * The report as one self-contained HTML file: inline CSS, inline SVG charts, no script,
 * no font or image from anywhere else, so it opens offline and can be mailed around.
 */
import { accuracyChart, rankChart, reviewChart, siteColors } from './charts.ts';
import type { ReportData } from './report-data.ts';
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
  if (days < 14) return `${Math.round(days)} days`;
  if (days < 90) return `${Math.round(days / 7)} weeks`;
  if (days < 365) return `${Math.round(days / 30.44)} months`;
  const years = Math.round((days / 365.25) * 10) / 10;
  return `${years} ${years === 1 ? 'year' : 'years'}`;
}

/** Only http(s) links become anchors: a stored link must not run script in the report. */
function linkCell(url: string | null): string {
  if (!url) return '–';
  if (!/^https?:\/\//i.test(url)) return escapeHtml(url);
  const text = url.length > 48 ? `${url.slice(0, 45)}…` : url;
  return `<a href="${escapeHtml(url)}" rel="noopener noreferrer">${escapeHtml(text)}</a>`;
}

const CSS = `
:root { color-scheme: light; --ink: #1d2330; --muted: #5b6475; --line: #e3e7ee; --bg: #f6f7fa; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 28px 24px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 32px 0 8px; }
h3 { font-size: 14px; margin: 0 0 6px; }
p.sub, .note { color: var(--muted); margin: 0 0 12px; }
.kpis { display: grid; grid-template-columns: repeat(4, 1fr); gap: 10px; margin-top: 18px; }
.kpi { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.kpi b { display: block; font-size: 20px; }
.kpi span { color: var(--muted); font-size: 12px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px; margin-bottom: 12px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 10px; }
.chart svg { display: block; width: 100%; height: auto; }
table { width: 100%; border-collapse: collapse; background: #fff; font-size: 13px; }
th, td { text-align: left; padding: 6px 6px; border-bottom: 1px solid var(--line); vertical-align: top;
  white-space: nowrap; }
th { background: #eef1f6; font-weight: 600; }
/* Free text (keywords, names, review text) is cut with an ellipsis, never wrapped: the
   full text is in the cell's title. Keeps every table inside 1200 px (test/report). */
td.clip { max-width: 230px; overflow: hidden; text-overflow: ellipsis; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.bad { color: #b3261e; font-weight: 600; }
.ok { color: #2e7d32; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
`;

function kpiTiles(data: ReportData): string {
  const k = data.kpis;
  const tiles: [string, string][] = [
    [number.format(k.businesses), 'businesses'],
    [number.format(k.listings), `listings (${number.format(k.inaccurate)} Inaccurate)`],
    [percent(k.accuracyScore), 'accuracy score now'],
    [number.format(k.keywordsTracked), 'keywords tracked'],
    [number.format(k.alertsInWindow), 'newly Inaccurate in window'],
    [number.format(k.reviewsInWindow), 'new reviews in window'],
    [k.averageRatingInWindow === null ? '–' : k.averageRatingInWindow.toFixed(2), 'average rating'],
    [number.format(k.unansweredAnswerable), 'reviews awaiting a response'],
  ];
  return `<section class="kpis">${tiles
    .map(
      ([value, label]) =>
        `<div class="kpi"><b>${escapeHtml(value)}</b><span>${escapeHtml(label)}</span></div>`,
    )
    .join('')}</section>`;
}

/** A business name, cut if long (the full name in the title), and its id. */
function businessCell(name: string | null, id: number): string {
  return `<td class="clip" title="${escapeHtml(`${name ?? ''} #${id}`)}">${escapeHtml(name ?? '')} <span class="note">#${id}</span></td>`;
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
  return `<table><thead><tr><th>keyword</th><th>business</th><th>site</th><th class="num">rank now</th><th class="num" title="the observation before the latest">before</th><th class="num">7 days ago</th><th class="num">30 days ago</th><th></th></tr></thead><tbody>${body}</tbody></table>`;
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
  const gains = data.gains.length
    ? `<h3 style="margin-top:14px">Gains</h3>${moversTable(data.gains)}`
    : '';
  return head + declines + gains;
}

function rankSection(data: ReportData): string {
  const head =
    '<h2>Keyword rankings</h2><p class="sub">Rank per day on each search site (1 is the top). ' +
    'A gap means searched but not ranked; a day not collected is simply skipped.</p>';
  if (!data.ranks.length) return `${head}<p class="note">No rank observations in this window.</p>`;
  const color = siteColors();
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
        ? ` · ${shown} of ${b.keywordsTracked} keywords shown, biggest losses first (<code>--business ${b.businessId}</code> for all)`
        : '';
    return `<h3>${escapeHtml(b.name)} <span class="note">#${b.businessId}${more}</span></h3><div class="grid">${charts}</div>`;
  });
  const rest =
    data.businessesNotCharted > 0
      ? `<p class="note">${data.businessesNotCharted} more businesses with rankings are not charted: the ones with the most new Inaccurate listings, then the lowest accuracy, come first. Use <code>--business ID</code> for any one.</p>`
      : '';
  return head + parts.join('') + rest;
}

function accuracySection(data: ReportData): string {
  const head =
    '<h2>Listing accuracy</h2><p class="sub">Live listings by status at the end of each day; accuracy score = Accurate ÷ (Accurate + Inaccurate), Not Present excluded.</p>';
  if (!data.accuracy.length) return `${head}<p class="note">No listing history in this window.</p>`;
  return `${head}<div class="card chart">${accuracyChart(data.accuracy, data.firstDay, data.lastDay)}</div>`;
}

function newlyInaccurateSection(data: ReportData): string {
  const head = `<h2>Newly Inaccurate listings</h2><p class="sub">${number.format(data.newlyInaccurateTotal)} in this window${
    data.newlyInaccurateTotal > data.newlyInaccurate.length
      ? `, the latest ${data.newlyInaccurate.length} shown`
      : ''
  }; what is wrong and the current status are the listing as last synced.</p>`;
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
  return `${head}<table><thead><tr><th>detected</th><th>business</th><th>site</th><th>was</th><th>now</th><th>wrong</th><th>live link</th></tr></thead><tbody>${body}</tbody></table>`;
}

function reviewSection(data: ReportData): string {
  const head =
    '<h2>Reviews</h2><p class="sub">New reviews and responses per day, and the average rating of the day’s new reviews.</p>';
  const chart = data.reviews.length
    ? `<div class="card chart">${reviewChart(data.reviews, data.firstDay, data.lastDay)}</div>`
    : '<p class="note">No reviews in this window.</p>';
  const sla = data.sla.length
    ? `<h3>Awaiting a response</h3><table><thead><tr><th>business</th><th>site</th><th class="num">unanswered</th><th class="num">oldest waiting</th><th class="num">median time to first response</th></tr></thead><tbody>${data.sla
        .map(
          (s) =>
            `<tr>${businessCell(s.businessName, s.businessId)}<td>${escapeHtml(siteLabel(s.siteName))}</td><td class="num">${s.unansweredAnswerable}</td><td class="num">${hoursText(s.oldestUnansweredAgeHours)}</td><td class="num">${hoursText(s.medianHoursToFirstResponse)}</td></tr>`,
        )
        .join('')}</tbody></table>`
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

/** One row per unanswered review, longest waiting and lowest rated first. */
function awaitingTable(data: ReportData): string {
  if (!data.awaitingTotal) return '';
  const shown = data.awaiting.length;
  const head = `<h3 style="margin-top:14px">Waiting for an answer</h3><p class="sub">${number.format(data.awaitingTotal)} reviews have no response, ${number.format(data.awaitingAnswerable)} of them answerable through the API (<code>listings-sync api reviews respond</code>)${
    shown < data.awaitingTotal ? `; the ${shown} waiting longest, lowest rated first` : ''
  }. The query "Reviews waiting for an answer" in docs/warehouse.md lists them all.</p>`;
  const body = data.awaiting
    .map(
      (r) =>
        `<tr><td class="num">${hoursText(r.waitingHours)}</td><td class="num">${r.rating === null ? '–' : `${r.rating}★`}</td><td>${escapeHtml(siteLabel(r.siteName))}</td>${businessCell(r.businessName, r.businessId)}<td>${r.reviewedAt ? r.reviewedAt.toISOString().slice(0, 10) : '–'}</td><td class="clip" title="${escapeHtml(r.excerpt)}">${escapeHtml(firstWords(r.excerpt))}</td><td>${permalinkCell(r.permalink)}</td><td class="${r.canRespond ? 'ok' : ''}">${r.canRespond ? 'yes' : 'no'}</td></tr>`,
    )
    .join('');
  return `${head}<table><thead><tr><th class="num">waiting</th><th class="num">rating</th><th>site</th><th>business</th><th>reviewed</th><th>text</th><th>link</th><th title="can_respond: answerable through the API">API</th></tr></thead><tbody>${body}</tbody></table>`;
}

/** The permalink as a short "open" anchor (http(s) only), the address in its title. */
function permalinkCell(url: string | null): string {
  if (!url) return '–';
  if (!/^https?:\/\//i.test(url)) return escapeHtml(url);
  return `<a href="${escapeHtml(url)}" title="${escapeHtml(url)}" rel="noopener noreferrer">open</a>`;
}

export function renderReportHtml(data: ReportData): string {
  const scope = data.business
    ? `${escapeHtml(data.business.name)} (#${data.business.businessId})`
    : `${number.format(data.kpis.accounts)} accounts, ${number.format(data.kpis.businesses)} businesses`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Listings report ${data.firstDay} – ${data.lastDay}</title>
<style>${CSS}</style>
</head>
<body>
<main>
<h1>Listings report</h1>
<p class="sub">${scope} · ${data.firstDay} to ${data.lastDay} (${data.days} days)</p>
${kpiTiles(data)}
${moversSection(data)}
${rankSection(data)}
${accuracySection(data)}
${newlyInaccurateSection(data)}
${reviewSection(data)}
<footer>Generated ${data.generatedAt.toISOString().replace('T', ' ').slice(0, 16)} UTC by listings-sync from the warehouse views (docs/warehouse.md, “Views”).</footer>
</main>
</body>
</html>
`;
}
