/**
 * Keywords as code: `listings-sync keywords apply --file keywords.json [--dry-run]`
 * makes each listed business's keywords match the file.
 *
 * The file:
 *
 *   {"businesses": [{"id": 10000001, "keywords": ["plumber austin", "drain cleaning"]}]}
 *
 * For each business the live upstream keywords (not archived) are compared with the
 * file's, case-insensitively and with runs of spaces folded: a keyword in the file and
 * not upstream is added (+), an upstream keyword not in the file is deleted (-), and a
 * keyword upstream twice keeps its first id. Businesses not in the file are not touched.
 * The plan is printed first; `--dry-run` stops there. Additions run before deletions, so
 * a business never goes without keywords on the way. Writes are never retried (the
 * client refuses): the first failure stops the apply, which reports what was done and
 * what was not, and exits 3. A second apply of the same file plans nothing. The command
 * is src/cli/commands/keywords.ts.
 */
import { z } from 'zod';
import { addKeyword, deleteKeyword, type Keyword, listKeywords } from '../../api/index.ts';
import { ApiError } from '../../api/transport/errors.ts';
import {
  describeApiError,
  EXIT,
  readJsonBody,
  type Session,
  UsageError,
  type WorkflowIo,
  withSession,
} from './command-context.ts';
import { resyncBusinesses } from './resync.ts';

/** Folded for comparison: the upstream keeps the text as given. */
export function foldKeyword(keyword: string): string {
  return keyword.trim().replace(/\s+/g, ' ').toLowerCase();
}

const keywordText = z
  .string({ error: 'expected a keyword (a string)' })
  .transform((value) => value.trim().replace(/\s+/g, ' '))
  .pipe(z.string().min(1, 'a keyword cannot be empty'));

export const keywordsFileSchema = z
  .object({
    businesses: z.array(
      z
        .object({
          id: z.number({ error: 'expected a business id (a number)' }).int().positive(),
          keywords: z.array(keywordText),
        })
        .strict()
        .superRefine((business, ctx) => {
          const seen = new Map<string, number>();
          business.keywords.forEach((keyword, index) => {
            const first = seen.get(foldKeyword(keyword));
            if (first !== undefined) {
              ctx.addIssue({
                code: 'custom',
                path: ['keywords', index],
                message: `"${keyword}" is already listed at keywords.${first}`,
              });
            } else seen.set(foldKeyword(keyword), index);
          });
        }),
    ),
  })
  .strict()
  .superRefine((file, ctx) => {
    const seen = new Map<number, number>();
    file.businesses.forEach((business, index) => {
      const first = seen.get(business.id);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['businesses', index, 'id'],
          message: `business ${business.id} is already listed at businesses.${first}`,
        });
      } else seen.set(business.id, index);
    });
  });

export type KeywordsFile = z.output<typeof keywordsFileSchema>;

/** Validates a parsed file; the error names each bad path (`businesses.0.keywords.2: …`). */
export function parseKeywordsFile(value: unknown, name: string): KeywordsFile {
  const parsed = keywordsFileSchema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    return `  ${path || '(file)'}: ${issue.message}`;
  });
  throw new UsageError(
    `${name} is not a valid keywords file ({"businesses": [{"id": 123, "keywords": ["…"]}]}):\n${issues.join('\n')}`,
  );
}

export interface BusinessKeywordPlan {
  businessId: number;
  add: string[];
  delete: Array<{ id: number; keyword: string }>;
}

/** What to change so that `upstream` (a business's keywords) matches `wanted`. */
export function planBusinessKeywords(
  businessId: number,
  wanted: readonly string[],
  upstream: readonly Keyword[],
): BusinessKeywordPlan {
  const wantedKeys = new Set(wanted.map(foldKeyword));
  const live = upstream.filter((k) => !k.archived).sort((a, b) => a.id - b.id);
  const kept = new Set<string>();
  const plan: BusinessKeywordPlan = { businessId, add: [], delete: [] };
  for (const keyword of live) {
    const key = foldKeyword(keyword.keyword);
    if (wantedKeys.has(key) && !kept.has(key)) kept.add(key);
    else plan.delete.push({ id: keyword.id, keyword: keyword.keyword });
  }
  for (const keyword of wanted) if (!kept.has(foldKeyword(keyword))) plan.add.push(keyword);
  return plan;
}

export function renderPlan(plans: readonly BusinessKeywordPlan[]): string {
  const lines: string[] = [];
  for (const plan of plans) {
    if (plan.add.length === 0 && plan.delete.length === 0) {
      lines.push(`Business ${plan.businessId}: no change`);
      continue;
    }
    lines.push(`Business ${plan.businessId}:`);
    for (const keyword of plan.add) lines.push(`  + ${keyword}`);
    for (const keyword of plan.delete) lines.push(`  - ${keyword.keyword} (id ${keyword.id})`);
  }
  const adds = plans.reduce((n, p) => n + p.add.length, 0);
  const deletes = plans.reduce((n, p) => n + p.delete.length, 0);
  lines.push(
    adds + deletes === 0
      ? `Plan: nothing to change across ${plans.length} business${plans.length === 1 ? '' : 'es'}.`
      : `Plan: ${adds} to add, ${deletes} to delete, across ${plans.filter((p) => p.add.length + p.delete.length > 0).length} of ${plans.length} business${plans.length === 1 ? '' : 'es'}.`,
  );
  return `${lines.join('\n')}\n`;
}

export interface ApplyOutcome {
  added: number;
  deleted: number;
  /** The step that failed, with the error; the apply stopped there. */
  failed?: { businessId: number; step: string; error: unknown };
  /** Businesses whose keywords changed upstream. */
  touched: number[];
}

/** Applies the plans in order; stops at the first failure (writes are not retried). */
export async function applyKeywordPlans(
  session: Session,
  plans: readonly BusinessKeywordPlan[],
  onStep: (line: string) => void,
): Promise<ApplyOutcome> {
  const outcome: ApplyOutcome = { added: 0, deleted: 0, touched: [] };
  const touch = (id: number) => {
    if (!outcome.touched.includes(id)) outcome.touched.push(id);
  };
  for (const plan of plans) {
    for (const keyword of plan.add) {
      try {
        const added = await addKeyword(session.api, session.credential, plan.businessId, keyword);
        outcome.added += 1;
        touch(plan.businessId);
        onStep(`Business ${plan.businessId}: + ${keyword} (id ${added.id})`);
      } catch (error) {
        outcome.failed = { businessId: plan.businessId, step: `+ ${keyword}`, error };
        return outcome;
      }
    }
    for (const keyword of plan.delete) {
      try {
        await deleteKeyword(session.api, session.credential, keyword.id);
        outcome.deleted += 1;
        touch(plan.businessId);
        onStep(`Business ${plan.businessId}: - ${keyword.keyword} (id ${keyword.id})`);
      } catch (error) {
        outcome.failed = {
          businessId: plan.businessId,
          step: `- ${keyword.keyword} (id ${keyword.id})`,
          error,
        };
        return outcome;
      }
    }
  }
  return outcome;
}

export interface ApplyOptions {
  file: string;
  dryRun?: boolean;
  account?: string;
}

export async function runKeywordsApply(io: WorkflowIo, options: ApplyOptions): Promise<number> {
  const file = parseKeywordsFile(
    await readJsonBody(io, options.file),
    options.file === '-' ? 'standard input' : options.file,
  );
  return withSession(io, options.account, async (session) => {
    if (!options.dryRun) await session.warehouse(); // before any write: the re-sync needs it
    // The plan reads every business first: a business that cannot be read fails the
    // command before anything is written.
    const plans: BusinessKeywordPlan[] = [];
    for (const business of file.businesses) {
      const upstream = await listKeywords(session.api, session.credential, business.id);
      if (upstream.rejected.length) {
        throw new Error(
          `business ${business.id}: ${upstream.rejected.length} keyword record(s) failed their schema (${upstream.rejected[0]!.reason}); without them the plan could delete or add the wrong keywords, so nothing was changed.`,
        );
      }
      plans.push(planBusinessKeywords(business.id, business.keywords, upstream.records));
    }
    io.stdout(renderPlan(plans));
    const changes = plans.reduce((n, p) => n + p.add.length + p.delete.length, 0);
    if (options.dryRun || changes === 0) {
      if (options.dryRun) io.stdout('Dry run: nothing was changed.\n');
      return EXIT.ok;
    }
    const outcome = await applyKeywordPlans(session, plans, (line) => io.stdout(`done: ${line}\n`));
    const synced = await resyncBusinesses(io, session, outcome.touched);
    if (outcome.failed) {
      const { error } = outcome.failed;
      const reason =
        error instanceof ApiError
          ? describeApiError(error)
          : ((error as Error).message ?? String(error));
      io.stdout(
        `Stopped: ${outcome.added} added and ${outcome.deleted} deleted before business ${outcome.failed.businessId} failed at "${outcome.failed.step}"; the rest of the plan was not applied.\n`,
      );
      io.stderr(`listings-sync: ${reason}\n`);
      io.stderr(
        '  Fix the cause and apply the file again: it plans only what is still different.\n',
      );
      return EXIT.partial;
    }
    io.stdout(`Applied: ${outcome.added} added, ${outcome.deleted} deleted.\n`);
    return synced ? EXIT.ok : EXIT.partial;
  });
}
