/**
 * No wall clock in the suite (docs/development.md, "The test suite"): time is injected,
 * never slept or asserted; a real process is awaited on an event, never on a budget. Every
 * test/**\/*.ts is read (this file too, which spells the calls it looks for in pieces),
 * and a line that measures or sleeps on the real clock fails here, named by file and line:
 * - a measure of real time: `performance`'s now and `process`'s hrtime, never allowed;
 * - `Date`'s now, but on an allowlisted line: a calendar date for the data a test seeds;
 * - a sleep: a timer that resolves a promise, or a promise that a timer settles, or the
 *   promise timers of `node:timers/promises`.
 * A test about time moves a clock (test/helpers/manual-clock.ts, `vi.useFakeTimers`); a
 * test that waits for a state awaits its event, or `vi.waitUntil` as a hang guard.
 */
import { readFileSync } from 'node:fs';
import { glob } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/** The calls, spelt in pieces so that this file's own text holds none of them. */
const PERFORMANCE_NOW = ['performance', 'now()'].join('.');
const DATE_NOW = ['Date', 'now()'].join('.');
const HRTIME = ['process', 'hrtime'].join('.');
const TIMER = ['set', 'Timeout'].join('');
const TIMERS_PROMISES = ['node:timers', 'promises'].join('/');

interface Allowed {
  /** From the repository's root. */
  file: string;
  /** Text of the one line allowed, exactly as it stands in the file. */
  line: string;
  reason: string;
}

/** Kept small: each is a calendar date for the data a test seeds, never a measure of time. */
const ALLOWED: readonly Allowed[] = [
  {
    file: 'test/raw/retention.test.ts',
    line: `startDate: new Date(${DATE_NOW} - 100 * DAY_MS).toISOString().slice(0, 10),`,
    reason: 'an upstream whose days lag ours by 100: its first day is a date, 100 days back',
  },
  {
    file: 'test/helpers/demo-world.ts',
    line: `endDate: new Date(${DATE_NOW} - 86_400_000).toISOString().slice(0, 10),`,
    reason: "the shared demo world ends yesterday: the docs' examples ask for the last 7 days",
  },
  {
    file: 'test/warehouse/views/local-seo-views.test.ts',
    line: `const START = new Date(${DATE_NOW} - LAST * DAY_MS).toISOString().slice(0, 10);`,
    reason: "the world's first date, so that its last night is today for the scorecard",
  },
];

/** At most this many allowlisted lines: a new one must be worth the argument. */
const ALLOWED_AT_MOST = 5;

interface Rule {
  says: string;
  pattern: RegExp;
  /** Whether an allowlisted line may hold it. */
  allowable: boolean;
}

const MEASURE_PERFORMANCE = 'a measure of real time: performance.now';
const MEASURE_HRTIME = 'a measure of real time: hrtime';
const WALL_CLOCK = 'the wall clock: Date.now';
const SLEEP_TIMER = 'a sleep: a timer that resolves a promise';
const SLEEP_PROMISE = 'a sleep: a promise that a timer settles';
const SLEEP_IMPORT = 'a sleep: the promise timers';

const RULES: readonly Rule[] = [
  { says: MEASURE_PERFORMANCE, pattern: /\bperformance\s*\.\s*now\s*\(/, allowable: false },
  { says: MEASURE_HRTIME, pattern: /\bprocess\s*\.\s*hrtime\b/, allowable: false },
  { says: WALL_CLOCK, pattern: /\bDate\s*\.\s*now\s*\(/, allowable: true },
  {
    says: SLEEP_TIMER,
    pattern: /\bsetTimeout\s*\(\s*(?:\(\s*\)\s*=>\s*)?(?:resolve|res|r|done|wake|next)\b/,
    allowable: true,
  },
  {
    says: SLEEP_PROMISE,
    pattern: /\bnew\s+Promise\s*(?:<[^>]*>)?\s*\(\s*\(?\s*\w*\s*\)?\s*=>\s*\{?\s*setTimeout\s*\(/,
    allowable: true,
  },
  { says: SLEEP_IMPORT, pattern: /['"](?:node:)?timers\/promises['"]/, allowable: true },
];

interface Complaint {
  file: string;
  line: number;
  says: string;
  text: string;
}

/** What `source` (the text of `file`) does with the wall clock, line by line. */
function complaints(
  file: string,
  source: string,
  allowed: readonly Allowed[] = ALLOWED,
): Complaint[] {
  const mine = allowed.filter((a) => a.file === file).map((a) => a.line);
  return source.split('\n').flatMap((text, index) => {
    const exempt = mine.includes(text.trim());
    return RULES.filter((rule) => rule.pattern.test(text) && !(rule.allowable && exempt)).map(
      (rule) => ({ file, line: index + 1, says: rule.says, text: text.trim() }),
    );
  });
}

const shown = (found: Complaint[]) =>
  found.map((c) => `${c.file}:${c.line}: ${c.says}: ${c.text}`).join('\n');

async function testSources(): Promise<Map<string, string>> {
  const sources = new Map<string, string>();
  for await (const file of glob('test/**/*.ts', { cwd: ROOT })) {
    sources.set(file, readFileSync(join(ROOT, file), 'utf8'));
  }
  return sources;
}

describe('the wall clock in tests', () => {
  it('is read or slept on by no test file, but on the allowlisted lines', async () => {
    const sources = await testSources();
    expect(sources.size).toBeGreaterThan(100);
    expect(sources.has('test/meta/wall-clock.test.ts')).toBe(true);
    const found = [...sources].flatMap(([file, source]) => complaints(file, source));
    expect(shown(found), 'time is injected, never slept or asserted').toBe('');
  });

  it('allows few lines, each still in its file and each with a reason', () => {
    expect(ALLOWED.length).toBeLessThanOrEqual(ALLOWED_AT_MOST);
    for (const entry of ALLOWED) {
      const lines = readFileSync(join(ROOT, entry.file), 'utf8')
        .split('\n')
        .map((line) => line.trim());
      expect(lines, `${entry.file}: an allowlisted line that is gone`).toContain(entry.line);
      expect(entry.reason.length, entry.file).toBeGreaterThan(20);
    }
  });

  it('names the file and line of every kind of wall-clock use in a source', () => {
    const source = [
      `import { setTimeout as sleep } from '${TIMERS_PROMISES}';`,
      `const started = ${PERFORMANCE_NOW};`,
      `const [s] = ${HRTIME}();`,
      `expect(${DATE_NOW} - started).toBeLessThan(5_000);`,
      `await new Promise((resolve) => ${TIMER}(resolve, 50));`,
      `await new Promise<void>((r) => { ${TIMER}(() => r(), 2_000); });`,
      `await new Promise((done) => ${TIMER}(() => done(), 10));`,
    ].join('\n');
    expect(complaints('test/fake.test.ts', source).map((c) => [c.line, c.says])).toEqual([
      [1, SLEEP_IMPORT],
      [2, MEASURE_PERFORMANCE],
      [3, MEASURE_HRTIME],
      [4, WALL_CLOCK],
      [5, SLEEP_TIMER],
      [5, SLEEP_PROMISE],
      [6, SLEEP_TIMER],
      [6, SLEEP_PROMISE],
      [7, SLEEP_TIMER],
      [7, SLEEP_PROMISE],
    ]);
    expect(shown(complaints('test/fake.test.ts', source))).toContain(
      `test/fake.test.ts:2: ${MEASURE_PERFORMANCE}: const started = ${PERFORMANCE_NOW};`,
    );
  });

  it('lets an allowlisted line be, but only that line of that file, and never a measure', () => {
    const allowed: Allowed[] = [
      { file: 'test/fake.test.ts', line: `const DAY = new Date(${DATE_NOW});`, reason: 'a date' },
    ];
    const source = [
      `  const DAY = new Date(${DATE_NOW});`,
      `const ELAPSED = ${DATE_NOW} - DAY.getTime();`,
    ].join('\n');
    expect(complaints('test/fake.test.ts', source, allowed).map((c) => c.line)).toEqual([2]);
    expect(complaints('test/other.test.ts', source, allowed).map((c) => c.line)).toEqual([1, 2]);
    const measured: Allowed[] = [
      { file: 'test/fake.test.ts', line: `const t = ${PERFORMANCE_NOW};`, reason: 'no' },
    ];
    expect(complaints('test/fake.test.ts', `const t = ${PERFORMANCE_NOW};`, measured)).toHaveLength(
      1,
    );
  });

  it('lets a clock the test moves and an event-driven wait be', () => {
    const source = [
      'await new Promise((resolve) => setImmediate(resolve));',
      'await clock.sleep(1_000, signal);',
      'clock.advance(30);',
      'await vi.advanceTimersByTimeAsync(1_000);',
      'await vi.waitUntil(() => !scheduler.isRunning(), { timeout: 25_000 });',
      `const timer = ${TIMER}(() => deadline.abort(), ms);`,
      "const observed = new Date(day + 'T04:00:00Z');",
    ].join('\n');
    expect(complaints('test/fake.test.ts', source)).toEqual([]);
  });
});
