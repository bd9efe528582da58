/**
 * Alert rules as code: `ALERT_RULES_FILE` (JSON, or YAML when the name ends in .yaml or
 * .yml) enables and tunes each kind and chooses how each sink groups its messages. It is
 * read once, with the configuration; a bad file stops the process before it does
 * anything, with one line per problem naming the rule and the field.
 *
 * The built-in defaults keep the behaviour from before rules existed: listings newly
 * Inaccurate (no damping) and failed review responses, each sent to Slack, plus
 * `volume_drop` (a read that would remove most of a business's rows is held a night); the
 * other kinds (`listing_broken_again` among them) are off until a rules file turns them
 * on. docs/alerts.md, "Alert rules") has a full example and each kind's exact trigger.
 *
 * The file's schema and loading live with the configuration (the base imports nothing of
 * ours); `src/alerts/rules.ts` re-exports them for the alert code.
 */
import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { z } from 'zod';
import { ListingsSyncError } from '../errors.ts';

/** A rules file that cannot be used: one line per problem, naming the rule and the field. */
export class AlertRulesError extends ListingsSyncError {
  readonly code = 'ALERT_RULES_INVALID';
}

/**
 * YAML's parser, loaded for the first YAML rules file: most processes read none, and the
 * package is 72 modules to load at every start (docs/benchmarks.md). The image's compile
 * cache holds it all the same (src/cli/warm-compile-cache.ts loads it).
 */
export function yamlParser(): (text: string) => unknown {
  return (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse;
}

const HOUR_MS = 3_600_000;

function whole(min: number, max: number) {
  return z
    .number({ error: `must be a whole number from ${min} to ${max}` })
    .int({ error: `must be a whole number from ${min} to ${max}` })
    .min(min, { error: `must be a whole number from ${min} to ${max}` })
    .max(max, { error: `must be a whole number from ${min} to ${max}` });
}

function hours(min: number, max: number) {
  return z
    .number({ error: `must be a number of hours from ${min} to ${max}` })
    .min(min, { error: `must be a number of hours from ${min} to ${max}` })
    .max(max, { error: `must be a number of hours from ${min} to ${max}` });
}

function percent() {
  return z
    .number({ error: 'must be a percentage from 0 to 100' })
    .min(0, { error: 'must be a percentage from 0 to 100' })
    .max(100, { error: 'must be a percentage from 0 to 100' });
}

const enabled = z.boolean({ error: 'must be true or false' });

/** A rule's or sink's settings: an unknown field (a typo) is an error, not ignored. */
function settings<T extends z.core.$ZodLooseShape>(shape: T) {
  return z.strictObject(shape, {
    error: (issue) => unknownKeyMessage(issue, 'field', Object.keys(shape)),
  });
}
const names = z.array(z.string().min(1, { error: 'must not be blank' }), {
  error: 'must be a list of names',
});

/**
 * The alert kinds (`alerts.kind`): the one list of them. It lives in the base so that the
 * rules file's schema can be keyed by it; src/alerts/kinds/kind.ts builds each kind's entry
 * (label, severity, icon, message, raise) over the same list, and the type check fails
 * when a kind lacks a rule here or an entry there (docs/alerts.md, "Alert rules").
 */
export const ALERT_RULE_KINDS = [
  'listing_inaccurate',
  'rank_drop',
  'low_rating_review',
  'review_response_failed',
  'sync_failed',
  'sync_stale',
  'volume_drop',
  'listing_broken_again',
] as const;

export type AlertRuleKind = (typeof ALERT_RULE_KINDS)[number];

/** `listing_broken_again` → `listingBrokenAgain`: a kind's field of `AlertRules`. */
type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;

function ruleField<K extends AlertRuleKind>(kind: K): CamelCase<K> {
  return kind.replace(/_([a-z])/g, (_, letter: string) => letter.toUpperCase()) as CamelCase<K>;
}

/**
 * One kind's rule: its fields in the rules file, each with its default (a rule the file
 * leaves out takes them all), and the rule as the alert code reads it.
 */
function rule<Shape extends z.core.$ZodLooseShape, Parsed>(
  shape: Shape,
  parsed: (file: z.output<z.ZodObject<Shape, z.core.$strict>>) => Parsed,
) {
  const schema = settings(shape);
  // Every field has a default, so `{}` parses; zod cannot see that through the generic.
  const defaults = () => schema.parse({}) as z.core.util.NoUndefined<z.output<typeof schema>>;
  return { schema: schema.default(defaults), parsed };
}

/** Every kind's rule; a kind of ALERT_RULE_KINDS without one fails the type check. */
const RULES = {
  listing_inaccurate: rule(
    {
      enabled: enabled.default(true),
      /** A listing that turns Inaccurate again this soon after its last alert raises none. */
      flapWindowHours: hours(0, 24 * 90).default(0),
    },
    (r): { enabled: boolean; flapWindowMs: number } => ({
      enabled: r.enabled,
      flapWindowMs: r.flapWindowHours * HOUR_MS,
    }),
  ),
  rank_drop: rule(
    {
      enabled: enabled.default(false),
      /** Leaving the top N (rank N or better yesterday, worse or unranked today). */
      top: whole(1, 100).nullable().default(3),
      /** Worsening by at least K positions against 7 days before. */
      worsenBy: whole(1, 100).nullable().default(5),
      /** Only these sites (e.g. `Google_new.local`); empty: every site. */
      sites: names.default([]),
      /** Only these keywords (case-insensitive); empty: every keyword. */
      keywords: names.default([]),
    },
    (
      r,
    ): {
      enabled: boolean;
      top: number | null;
      worsenBy: number | null;
      sites: readonly string[];
      keywords: readonly string[];
    } => ({ ...r }),
  ),
  low_rating_review: rule(
    {
      enabled: enabled.default(false),
      /** A new review rated this or lower (1 to 5 stars). */
      maxRating: whole(1, 5).default(2),
      /** Only these sites; empty: every site. */
      sites: names.default([]),
    },
    (r): { enabled: boolean; maxRating: number; sites: readonly string[] } => ({ ...r }),
  ),
  review_response_failed: rule({ enabled: enabled.default(true) }, (r): { enabled: boolean } => ({
    ...r,
  })),
  sync_failed: rule(
    {
      enabled: enabled.default(false),
      /** Which run endings count as failures. */
      statuses: z
        .array(
          z.enum(['failed', 'partial', 'interrupted'], {
            error: 'must be failed, partial or interrupted',
          }),
        )
        .min(1, { error: 'must name at least one status' })
        .default(['failed', 'partial']),
      /** How many runs in a row must end so before one alert is raised. */
      consecutive: whole(1, 100).default(1),
    },
    (r): { enabled: boolean; statuses: readonly string[]; consecutive: number } => ({ ...r }),
  ),
  sync_stale: rule(
    {
      enabled: enabled.default(false),
      /** No successful run of an account for this long. */
      hours: hours(1, 24 * 30).default(26),
    },
    (r): { enabled: boolean; afterMs: number } => ({
      enabled: r.enabled,
      afterMs: r.hours * HOUR_MS,
    }),
  ),
  volume_drop: rule(
    {
      /** Off: every removal a read implies applies at once, as before issue 19. */
      enabled: enabled.default(true),
      /** A read is held when it would remove more than this percentage of the stored rows… */
      removedPercent: percent().default(50),
      /** …and at least this many rows (so losing one or two of three still applies at once). */
      minRows: whole(1, 1_000_000).default(3),
    },
    /**
     * Removals held when a stream's read would mark gone more than `share` (0 to 1) of the
     * business's live stored rows of that stream, and at least `minRows` of them.
     */
    (r): { enabled: boolean; share: number; minRows: number } => ({
      enabled: r.enabled,
      share: r.removedPercent / 100,
      minRows: r.minRows,
    }),
  ),
  listing_broken_again: rule(
    {
      enabled: enabled.default(false),
      /** A listing that turns Inaccurate within this many days of its last fix. */
      windowDays: whole(1, 365).default(30),
    },
    /** A listing Inaccurate again within `windowMs` of its last fix. */
    (r): { enabled: boolean; windowDays: number; windowMs: number } => ({
      enabled: r.enabled,
      windowDays: r.windowDays,
      windowMs: r.windowDays * 24 * HOUR_MS,
    }),
  ),
} satisfies { [K in AlertRuleKind]: { schema: z.ZodType; parsed(file: never): unknown } };

type Rules = typeof RULES;

const rulesSchema = z.strictObject(
  Object.fromEntries(ALERT_RULE_KINDS.map((kind) => [kind, RULES[kind].schema])) as {
    [K in AlertRuleKind]: Rules[K]['schema'];
  },
  { error: (issue) => unknownKeyMessage(issue, 'rule', ALERT_RULE_KINDS) },
);

const sinksSchema = z.strictObject(
  {
    slack: settings({
      mode: z.enum(['digest', 'each'], { error: 'must be digest or each' }).default('digest'),
      /** Alerts listed by name in a digest; the rest are counted ("and 42 more"). */
      worst: whole(1, 50).default(10),
    }).default({ mode: 'digest', worst: 10 }),
    webhook: settings({
      mode: z.enum(['each', 'batch'], { error: 'must be each or batch' }).default('each'),
    }).default({ mode: 'each' }),
  },
  { error: (issue) => unknownKeyMessage(issue, 'sink', ['slack', 'webhook']) },
);

const fileSchema = z.strictObject(
  {
    rules: rulesSchema.default(rulesSchema.parse({})),
    sinks: sinksSchema.default(sinksSchema.parse({})),
  },
  { error: (issue) => unknownKeyMessage(issue, 'section', ['rules', 'sinks']) },
);

function unknownKeyMessage(
  issue: { code?: string; keys?: string[] },
  what: string,
  known?: readonly string[],
) {
  if (issue.code !== 'unrecognized_keys') return undefined;
  return `unknown ${what} ${(issue.keys ?? []).join(', ')}${known ? ` (known: ${known.join(', ')})` : ''}`;
}

export type AlertRulesFile = z.output<typeof fileSchema>;

/** The parsed rules, with durations in milliseconds: one field per kind (`rankDrop`, …). */
export type AlertRules = {
  [K in AlertRuleKind as CamelCase<K>]: ReturnType<Rules[K]['parsed']>;
} & {
  sinks: {
    slack: { mode: 'digest' | 'each'; worst: number };
    webhook: { mode: 'each' | 'batch' };
  };
  /** Where the rules came from, for messages: a file path or `built-in defaults`. */
  source: string;
};

function toRules(file: AlertRulesFile, source: string): AlertRules {
  const rules = Object.fromEntries(
    ALERT_RULE_KINDS.map((kind) => [
      ruleField(kind),
      (RULES[kind].parsed as (rule: unknown) => unknown)(file.rules[kind]),
    ]),
  );
  return Object.freeze({
    ...rules,
    sinks: { slack: { ...file.sinks.slack }, webhook: { ...file.sinks.webhook } },
    source,
  }) as AlertRules;
}

/** Today's behaviour: what runs without a rules file. */
export const DEFAULT_ALERT_RULES: AlertRules = toRules(fileSchema.parse({}), 'built-in defaults');

/** `rules.rank_drop.top` → `rule "rank_drop", field "top"`. */
function where(path: readonly PropertyKey[]): string {
  const [section, name, ...rest] = path.map(String);
  const field = rest.length ? `, field "${rest.join('.')}"` : '';
  if (section === 'rules' && name) return `rule "${name}"${field}`;
  if (section === 'sinks' && name) return `sink "${name}"${field}`;
  return section ? `"${section}"` : 'the file';
}

/** Validates an already-parsed rules document; `source` names it in errors. */
export function parseAlertRules(document: unknown, source: string): AlertRules {
  const parsed = fileSchema.safeParse(document ?? {});
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `- ${where(issue.path)}: ${issue.message}`);
    throw new AlertRulesError(`ALERT_RULES_FILE "${source}" is not valid:\n${lines.join('\n')}`);
  }
  return toRules(parsed.data, source);
}

/**
 * 1 MiB: a rules file is a few hundred bytes (six rules, two sinks); one this large is the
 * wrong file, and reading a 50 MB one whole would exhaust the CLI's 256 MB heap.
 */
export const ALERT_RULES_FILE_MAX_BYTES = 1024 * 1024;

/** A rules file's rules, and what in it is almost surely a mistake (an empty file). */
export interface AlertRulesFileResult {
  rules: AlertRules;
  warnings: string[];
}

/**
 * Reads and validates a rules file (YAML for .yaml/.yml, JSON otherwise). A file larger
 * than ALERT_RULES_FILE_MAX_BYTES is refused before it is read; an empty or `null` file
 * gives the built-in defaults and a warning naming it.
 */
export function readAlertRulesFile(file: string): AlertRulesFileResult {
  let text: string;
  try {
    const { size } = statSync(file);
    if (size > ALERT_RULES_FILE_MAX_BYTES) {
      throw new AlertRulesError(
        `ALERT_RULES_FILE "${file}" is ${size} bytes, more than the ${ALERT_RULES_FILE_MAX_BYTES}-byte (1 MiB) cap: ` +
          'a rules file is a few hundred bytes; check that the variable names the rules file.',
      );
    }
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    if (cause instanceof AlertRulesError) throw cause;
    throw new AlertRulesError(
      `ALERT_RULES_FILE names "${file}", which cannot be read (${(cause as NodeJS.ErrnoException).code ?? 'error'}).`,
      { cause },
    );
  }
  let document: unknown;
  const yaml = /\.ya?ml$/i.test(file);
  const parse = yaml ? yamlParser() : JSON.parse;
  try {
    document = parse(text);
  } catch (cause) {
    if (text.trim() === '') document = null;
    else {
      const reason = (cause as Error).message.split('\n')[0];
      throw new AlertRulesError(
        `ALERT_RULES_FILE "${file}" is not valid ${yaml ? 'YAML' : 'JSON'} (${reason}).`,
        { cause },
      );
    }
  }
  const warnings =
    document === null || document === undefined
      ? [
          `ALERT_RULES_FILE "${file}" is ${text.trim() === '' ? 'empty' : 'null'}, so the built-in alert rules apply; ` +
            'unset ALERT_RULES_FILE for them, or fill the file in.',
        ]
      : [];
  return { rules: parseAlertRules(document, file), warnings };
}

/** Reads and validates a rules file (YAML for .yaml/.yml, JSON otherwise). */
export function loadAlertRulesFile(file: string): AlertRules {
  return readAlertRulesFile(file).rules;
}
