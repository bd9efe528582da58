/**
 * Directory credentials kept out of the raw zone, end to end (docs/warehouse.md, "Raw
 * zone"): a night whose listings answers write the credential keys with JSON escapes and
 * give them values of every type leaves no credential in any table, in any kept body or
 * in `raw show --raw`, and `has_site_credentials` reads the same live and on replay.
 *
 * The sandbox serves plain keys and string or null values only; what it cannot produce,
 * the spellings and types, a small HTTP front adds by rewriting its listings answers.
 * Everything else (the sandbox, the client, the sync, the database, the command) is real.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Kysely, sql } from 'kysely';
import { describe, expect, it, onTestFinished } from 'vitest';
import { listingSchema } from '../../src/api/listings.ts';
import { silentLogger } from '../../src/log.ts';
import { keptBodyTexts } from '../../src/raw/inspect.ts';
import { replay } from '../../src/replay/replay.ts';
import type { Database } from '../../src/warehouse/database.ts';
import { createCommandWarehouse, runCli } from '../helpers/cli.ts';
import { type TestBackend, type TestWarehouse, testBackends } from '../helpers/database.ts';
import { secretsFoundIn } from '../helpers/secret-scan.ts';
import { dumpAll, nightOf, sandboxSuite, sync } from '../sync/harness.ts';
import { inSchema } from './documented-content.ts';

/** What a kept body holds in place of a credential string (docs/warehouse.md, "Raw zone"). */
const KEPT_OUT_MARKER = '[kept out of the raw zone]';
/** What it holds in place of a credential of any other type (the same section). */
const KEPT_OUT_VALUE = ['[kept out of the raw zone]'];

const WORLD = { seed: 41, accounts: 1, businessesPerAccount: 2, startDate: '2026-04-02' };

/** `name` with every character written as a `\uXXXX` escape, in the given hex case. */
function escapedWhole(name: string, upper = false): string {
  return [...name]
    .map((c) => {
      const hex = c.charCodeAt(0).toString(16).padStart(4, '0');
      return `\\u${upper ? hex.toUpperCase() : hex}`;
    })
    .join('');
}

/** A way of writing a listing's credentials: its `"key":value` texts and the secrets they hold. */
interface Spelling {
  entries: string[];
  secrets: unknown[];
}

let numbers = 7_319_000_000_000;
/** Each listing of an answer gets the next spelling; `tag` makes its secrets its own. */
const SPELLINGS: ((tag: string) => Spelling)[] = [
  (tag) => ({
    entries: ['"site_username":null', `"site\\u005fpassword":"zz-esc-pw-${tag}"`],
    secrets: [`zz-esc-pw-${tag}`],
  }),
  (tag) => ({
    entries: [`"\\u0073ite_username":"zz-esc-login-${tag}"`, '"site_password":null'],
    secrets: [`zz-esc-login-${tag}`],
  }),
  (tag) => ({
    entries: [
      `"${escapedWhole('site_username')}":"zz-whole-login-${tag}"`,
      `"${escapedWhole('site_password', true)}":"zz-whole-pw-${tag}"`,
    ],
    secrets: [`zz-whole-login-${tag}`, `zz-whole-pw-${tag}`],
  }),
  () => {
    const pin = numbers++;
    return { entries: ['"site_username":null', `"site_password":${pin}`], secrets: [pin] };
  },
  (tag) => {
    const value = [`zz-array-${tag}`, numbers++, { pin: `zz-array-pin-${tag}` }];
    return {
      entries: ['"site\\u005fusername":null', `"site_password":${JSON.stringify(value)}`],
      secrets: [value],
    };
  },
  (tag) => {
    const value = { login: `zz-object-${tag}`, more: { pw: [`zz-object-pw-${tag}`] } };
    return {
      entries: [`"site_username":${JSON.stringify(value)}`, '"site\\u005Fpassword":null'],
      secrets: [value],
    };
  },
  () => ({ entries: ['"site_username":true', '"site_password":false'], secrets: [] }),
  () => ({ entries: ['"site_username":"   "', '"site\\u005fpassword":""'], secrets: [] }),
  (tag) => ({
    // The value itself written in escapes: only a scan that decodes them finds it.
    entries: [
      '"site_username":null',
      `"site_password":"${escapedWhole(`zz-escaped-value-${tag}`)}"`,
    ],
    secrets: [`zz-escaped-value-${tag}`],
  }),
  (tag) => ({
    entries: [
      '"site_username":null',
      '"site_password":null',
      `"history":{"changes":[{"on":"2026-03-01","site\\u005fpassword":"zz-deep-${tag}"}]}`,
    ],
    secrets: [`zz-deep-${tag}`],
  }),
  (tag) => ({
    // The key twice: JSON reads the last (blank) value; the first is in the text only.
    entries: [
      `"site\\u005fpassword":"zz-first-copy-${tag}"`,
      '"site_username":null',
      '"site_password":""',
    ],
    secrets: [`zz-first-copy-${tag}`],
  }),
];

/** What the front served: every secret it wrote, and what each listing's credentials derive. */
interface Served {
  secrets: unknown[];
  /** `businessId:listingId` → has_site_credentials, derived by listingSchema from the answer served. */
  derived: Map<string, boolean>;
  businesses: Set<number>;
}

/** A listings answer with each listing's credentials written by the next spelling. */
function rewriteListings(businessId: number, text: string, served: Served): string {
  const body = JSON.parse(text) as { success?: unknown; result?: unknown };
  if (body.success !== true || !Array.isArray(body.result)) return text;
  const records = (body.result as Record<string, unknown>[]).map((record, index) => {
    const spelling = (SPELLINGS[index % SPELLINGS.length] as (tag: string) => Spelling)(
      `${businessId}-${index}`,
    );
    served.secrets.push(...spelling.secrets);
    const rest = Object.entries(record)
      .filter(([key]) => key !== 'site_username' && key !== 'site_password')
      .map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`);
    const [id, ...others] = rest;
    return `{${[id, ...spelling.entries, ...others].join(',')}}`;
  });
  // And a listing the schema refuses (an unknown status), for quarantine to keep.
  const refused = {
    login: `zz-refused-login-${businessId}`,
    pw: { pw: `zz-refused-pw-${businessId}` },
  };
  served.secrets.push(refused.login, refused.pw);
  records.push(
    `{"id":${businessId * 100 + 99},"site\\u005fusername":"${refused.login}","site_password":${JSON.stringify(refused.pw)},"site_name":"Nowhere","status":"Sideways"}`,
  );
  const rewritten = `{"success":true,"result":[${records.join(',')}]}`;
  for (const record of (JSON.parse(rewritten) as { result: unknown[] }).result) {
    const parsed = listingSchema.safeParse(record);
    if (parsed.success) {
      served.derived.set(`${businessId}:${parsed.data.id}`, parsed.data.hasSiteCredentials);
    }
  }
  served.businesses.add(businessId);
  return rewritten;
}

/**
 * An HTTP front for the sandbox: every exchange passes through as it is, but for the
 * listings answers, which `rewriteListings` rewrites.
 */
async function listingsRewritingFront(
  target: string,
  served: Served,
): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const contentType = request.headers['content-type'];
    const upstream = await fetch(`${target}${request.url ?? '/'}`, {
      method: request.method ?? 'GET',
      headers: contentType ? { 'content-type': contentType } : {},
      ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
    });
    let text = await upstream.text();
    const listings = /^\/api\/v2\/businesses\/(\d+)\/listings\.json/.exec(request.url ?? '');
    if (listings && request.method === 'GET' && upstream.status === 200) {
      text = rewriteListings(Number(listings[1]), text, served);
    }
    const headers: Record<string, string> = {};
    for (const name of ['content-type', 'retry-after']) {
      const value = upstream.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    response.writeHead(upstream.status, headers);
    response.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/**
 * A warehouse a command run in-process reaches too, and the environment that points it
 * there (test/helpers/cli.ts, `createCommandWarehouse`); closed when the test finishes.
 */
async function commandReachableWarehouse(backend: TestBackend): Promise<{
  warehouse: TestWarehouse;
  env: Record<string, string>;
}> {
  const target = await createCommandWarehouse(backend);
  onTestFinished(() => target.close());
  return { warehouse: target.warehouse, env: { ...target.env, LOG_LEVEL: 'warn' } };
}

/** Every row of every table of every schema as text, every kept body decompressed. */
async function everythingStored(db: Kysely<Database>): Promise<string> {
  const { rows: tables } = await sql<{ table_schema: string; table_name: string }>`
    select table_schema, table_name from information_schema.tables
    where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')
    order by 1, 2`.execute(db);
  const parts: string[] = [];
  for (const { table_schema, table_name } of tables) {
    const { rows } = await sql<{ row: string }>`
      select t::text as row from ${sql.id(table_schema, table_name)} t`.execute(db);
    parts.push(...rows.map((r) => r.row));
  }
  parts.push(...(await keptBodies(db)));
  return parts.join('\n');
}

async function keptBodies(db: Kysely<Database>): Promise<string[]> {
  return (await keptBodyTexts(db)).map((b) => b.text);
}

async function credentialFlags(db: Kysely<Database>): Promise<Map<string, boolean>> {
  const rows = await db
    .selectFrom('listings')
    .select(['business_id', 'listing_id', 'has_site_credentials'])
    .execute();
  return new Map(
    rows.map((r) => [`${r.business_id}:${r.listing_id}`, r.has_site_credentials] as const),
  );
}

describe.each(testBackends)('directory credentials kept out, end to end (%s)', (backend) => {
  const suite = sandboxSuite(WORLD);

  it('keeps escaped keys and values of every type out of every table, body and raw show', async () => {
    const served: Served = { secrets: [], derived: new Map(), businesses: new Set() };
    const front = await listingsRewritingFront(suite.sandbox.baseUrl, served);
    onTestFinished(() => front.close());
    const credentials = suite.sandbox.credentials.map((c) => ({ ...c, baseUrl: front.baseUrl }));
    const { warehouse, env } = await commandReachableWarehouse(backend);

    const result = await sync(warehouse, suite.api, credentials, {
      now: () => nightOf(suite.sandbox),
    });
    // Partial only for the refused listing of each business, quarantined.
    expect(result.status).toBe('partial');
    expect(result.stats.failures).toEqual([]);
    expect(result.stats.quarantined).toBe(WORLD.businessesPerAccount);
    expect(served.businesses.size).toBe(WORLD.businessesPerAccount);
    // Every spelling was served, to every business; and some listings derive each way.
    expect(served.derived.size).toBeGreaterThanOrEqual(
      WORLD.businessesPerAccount * SPELLINGS.length,
    );
    expect(new Set(served.derived.values())).toEqual(new Set([true, false]));
    expect(served.secrets.length).toBeGreaterThan(20);

    const db = warehouse.db;
    // Kept out where they were: the bodies hold the markers, parsed as the sync reads them.
    const bodies = (await keptBodies(db)).join('\n');
    expect(secretsFoundIn(bodies, served.secrets)).toEqual([]);
    expect(bodies).toContain(`"site_password":${JSON.stringify(KEPT_OUT_MARKER)}`);
    expect(bodies).toContain(`"site_password":${JSON.stringify(KEPT_OUT_VALUE)}`);
    expect(bodies).toContain(`"site_username":${JSON.stringify(KEPT_OUT_VALUE)}`);
    // The refused listing is in quarantine, its credentials not.
    const quarantined = await db.selectFrom('quarantine').select('payload').execute();
    expect(quarantined.length).toBe(WORLD.businessesPerAccount);

    // has_site_credentials as the answers served say, live and replayed from the raw zone.
    const live = await credentialFlags(db);
    expect(live).toEqual(served.derived);
    await replay({
      warehouse,
      ...(warehouse.databaseUrl ? { databaseUrl: warehouse.databaseUrl } : {}),
      into: 'replayed',
      logger: silentLogger(),
    });
    expect(await inSchema(warehouse, 'replayed', credentialFlags)).toEqual(live);

    // Nowhere in the database, the replayed schema included; nor in the contract tables'
    // dump the other suites scan.
    expect(secretsFoundIn(await everythingStored(db), served.secrets)).toEqual([]);
    expect(secretsFoundIn(await dumpAll(warehouse), served.secrets)).toEqual([]);

    // Nor in what `raw show` prints, byte for byte or pretty.
    for (const businessId of served.businesses) {
      const args = [
        'raw',
        'show',
        '--business',
        String(businessId),
        '--operation',
        'list_listings',
      ];
      const raw = await runCli([...args, '--raw'], env);
      expect(raw.stderr).toBe('');
      expect(raw.code).toBe(0);
      expect(raw.stdout).toContain(KEPT_OUT_MARKER);
      expect(secretsFoundIn(raw.stdout, served.secrets)).toEqual([]);
      const pretty = await runCli(args, env);
      expect(pretty.code).toBe(0);
      expect(secretsFoundIn(pretty.stdout, served.secrets)).toEqual([]);
    }
  });
});
