/**
 * The migrated test templates are named by their migration set (`templateKey()`), so two
 * checkouts on one machine or PostgreSQL server never share one; each run marks its own
 * used, and the set-up removes the others no run has used for `STALE_TEMPLATE_MS`
 * (test/helpers/warehouse-template.ts). PostgreSQL tests skip when TEST_DATABASE_URL is
 * unset.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  adminQuery,
  prunePgliteTemplates,
  prunePostgresTemplates,
  STALE_TEMPLATE_MS,
  templateKey,
} from '../helpers/warehouse-template.ts';

const serverUrl = process.env['TEST_DATABASE_URL']?.trim() || undefined;
const DAY_MS = 86_400_000;
const fakeKey = () => randomBytes(8).toString('hex');

describe('the PGlite templates in the cache directory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ls-stale-templates-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps this key and any used within the week, marks this key used, removes the rest', () => {
    const now = Date.parse('2026-06-01T00:00:00Z');
    const at = (name: string, daysAgo: number, directory = false) => {
      const path = join(dir, name);
      if (directory) mkdirSync(path);
      else writeFileSync(path, 'x');
      const seconds = (now - daysAgo * DAY_MS) / 1000;
      utimesSync(path, seconds, seconds);
    };
    const [current, recent, stale] = [fakeKey(), fakeKey(), fakeKey()];
    at(`listings-sync-pglite-template-${current}.tar`, 30);
    at(`listings-sync-pglite-template-${current}.d`, 30, true);
    at(`listings-sync-pglite-empty-${recent}.tar`, 6);
    at(`listings-sync-pglite-template-${stale}.tar`, 8);
    at(`listings-sync-pglite-empty-${stale}.tar`, 8);
    at(`listings-sync-pglite-template-${stale}.d`, 8, true);
    at(`listings-sync-pglite-template-${stale}.tar.123.abcd.partial`, 8);
    at('listings-sync-chromium-153.0.0', 30, true);

    const removed = prunePgliteTemplates(dir, current, new Date(now));

    expect(removed.sort()).toEqual(
      [
        `listings-sync-pglite-empty-${stale}.tar`,
        `listings-sync-pglite-template-${stale}.d`,
        `listings-sync-pglite-template-${stale}.tar`,
      ].sort(),
    );
    expect(readdirSync(dir).sort()).toEqual(
      [
        'listings-sync-chromium-153.0.0',
        `listings-sync-pglite-empty-${recent}.tar`,
        `listings-sync-pglite-template-${current}.d`,
        `listings-sync-pglite-template-${current}.tar`,
        `listings-sync-pglite-template-${stale}.tar.123.abcd.partial`,
      ].sort(),
    );
    // Marked used now: a week later it is still kept, a week and a day later (by another
    // checkout's run) it goes.
    expect(prunePgliteTemplates(dir, fakeKey(), new Date(now + STALE_TEMPLATE_MS - 1))).toEqual([
      `listings-sync-pglite-empty-${recent}.tar`,
    ]);
    expect(prunePgliteTemplates(dir, fakeKey(), new Date(now + STALE_TEMPLATE_MS)).sort()).toEqual(
      [
        `listings-sync-pglite-template-${current}.d`,
        `listings-sync-pglite-template-${current}.tar`,
      ].sort(),
    );
  });
});

describe.skipIf(!serverUrl)('the PostgreSQL templates on the server', () => {
  const url = serverUrl as string;
  const made: string[] = [];
  afterAll(async () => {
    for (const name of made) await adminQuery(url, `drop database if exists "${name}"`);
  });

  const template = async (note: string | null): Promise<string> => {
    const name = `listings_sync_template_${fakeKey()}`;
    await adminQuery(url, `create database "${name}"`);
    made.push(name);
    if (note !== null) await adminQuery(url, `comment on database "${name}" is '${note}'`);
    return name;
  };
  const noteOf = async (name: string) =>
    (
      await adminQuery<{ note: string | null }>(
        url,
        `select shobj_description(oid, 'pg_database') as note from pg_database where datname = $1`,
        [name],
      )
    )[0]?.note;

  it("drops one unused for a week, keeps a recent one, starts an unmarked one's week", async () => {
    // The real clock: the server's other templates (other checkouts') are marked or kept,
    // never dropped early.
    const now = new Date();
    const ago = (days: number) => new Date(now.getTime() - days * DAY_MS).toISOString();
    const stale = await template(`listings-sync test template, last used ${ago(8)}`);
    const recent = await template(`listings-sync test template, last used ${ago(6)}`);
    const unmarked = await template(null);

    const dropped = await prunePostgresTemplates(url, templateKey(), now);

    expect(dropped).toContain(stale);
    expect(dropped).not.toContain(recent);
    expect(dropped).not.toContain(unmarked);
    const left = await adminQuery<{ datname: string }>(
      url,
      'select datname from pg_database where datname = any($1)',
      [[stale, recent, unmarked]],
    );
    expect(left.map((r) => r.datname).sort()).toEqual([recent, unmarked].sort());
    expect(await noteOf(unmarked)).toBe(
      `listings-sync test template, last used ${now.toISOString()}`,
    );
    expect(await noteOf(`listings_sync_template_${templateKey()}`)).toBe(
      `listings-sync test template, last used ${now.toISOString()}`,
    );
  });
});
