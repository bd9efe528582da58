/**
 * The demo's size (`listings-sync demo`, `npm start`): what it simulates by default and
 * the most its `--days` and `--businesses` options take. Apart from src/demo/demo.ts so that
 * the command's options are read without loading the demo itself.
 */

/** Days simulated after the first sync: a month of history, ending on the last whole day. */
export const DEMO_DAYS = 30;
export const DEMO_ACCOUNTS = 2;
/**
 * The sandbox default: 2 accounts × 25 businesses × 31 syncs on PGlite take about 85
 * seconds of CPU, report included (README.md, "Quick start", says what was measured).
 */
export const DEMO_BUSINESSES_PER_ACCOUNT = 25;
/** A year: the report's and the views' longest window. */
export const MAX_DEMO_DAYS = 365;
/** The sandbox's world is generated in memory: 1,000 businesses an account keep it small. */
export const MAX_DEMO_BUSINESSES_PER_ACCOUNT = 1000;
