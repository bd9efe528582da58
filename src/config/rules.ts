/**
 * The zod rules a setting's value follows, each with its default, so that the two are
 * written once: a rule turns the environment's text (or its absence) into the value the
 * code reads. Messages are full sentences naming the variable.
 */
import { isIP } from 'node:net';
import { validate as isValidCron } from 'node-cron';
import { z } from 'zod';

/** What a setting's entry takes from its rule: the schema, the default, how both read. */
export interface RuleParts<T> {
  /** The schema of the variable called `name`: environment text (or undefined) to value. */
  rule: (name: string) => z.ZodType<T, string | undefined>;
  /** The default as it would be written in the environment; undefined: none (unset). */
  default: number | string | undefined;
  /** The default as `--help` and docs/configuration.md show it. */
  defaultText?: string;
  /** The value as `listings-sync config` prints it (String() otherwise). */
  show?: (value: T) => string;
  /** A whole number's range, for a schema that states the rule (the Airbyte spec). */
  bounds?: { min: number; max: number };
}

function trimmed(value: string | undefined): string | undefined {
  return value?.trim() ? value.trim() : undefined;
}

export function httpUrl(what: string) {
  return z.string().superRefine((value, ctx) => {
    const url = URL.parse(value);
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      ctx.addIssue({ code: 'custom', message: `${what} must be an http:// or https:// URL` });
    }
  });
}

/** A whole number from `min` to `max`. */
export function integer(options: {
  default: number;
  min: number;
  max: number;
  defaultText?: string;
}): RuleParts<number> {
  const { min, max } = options;
  return {
    default: options.default,
    defaultText: options.defaultText ?? String(options.default),
    bounds: { min, max },
    rule: (name) =>
      z
        .string()
        .optional()
        .transform((value, ctx) => {
          if (value === undefined || value.trim() === '') return options.default;
          const parsed = Number(value);
          if (!Number.isInteger(parsed) || parsed < min || parsed > max) {
            ctx.addIssue({
              code: 'custom',
              message: `${name} must be a whole number from ${min} to ${max} (got "${value}")`,
            });
            return z.NEVER;
          }
          return parsed;
        }),
  };
}

/** A whole number of seconds in the environment, milliseconds in the code. */
export function seconds(options: { default: number; min: number; max: number }): RuleParts<number> {
  const parts = integer(options);
  return {
    ...parts,
    rule: (name) => parts.rule(name).transform((value) => value * 1000),
    show: (ms) => String(ms / 1000),
  };
}

/** Free text; `fallback` when unset or blank. */
export function text(fallback: string, defaultText = fallback): RuleParts<string> {
  return {
    default: fallback,
    defaultText,
    rule: () =>
      z
        .string()
        .optional()
        .transform((value) => trimmed(value) ?? fallback),
  };
}

/** Free text with no default: undefined when unset or blank. */
export function optionalText(defaultText?: string): RuleParts<string | undefined> {
  return {
    default: undefined,
    ...(defaultText ? { defaultText } : {}),
    rule: () => z.string().optional().transform(trimmed),
  };
}

/** An http(s) URL, or undefined when unset. */
export function optionalUrl(defaultText?: string): RuleParts<string | undefined> {
  return {
    default: undefined,
    ...(defaultText ? { defaultText } : {}),
    rule: (name) => z.string().optional().transform(trimmed).pipe(httpUrl(name).optional()),
  };
}

/** A text that must match `pattern` (else `message(name)`), or undefined when unset. */
function optionalMatching(
  defaultText: string,
  pattern: RegExp,
  message: (name: string) => string,
): RuleParts<string | undefined> {
  return {
    default: undefined,
    defaultText,
    rule: (name) =>
      z
        .string()
        .optional()
        .transform(trimmed)
        .refine((value) => value === undefined || pattern.test(value), { message: message(name) }),
  };
}

/** A postgres:// URL, or undefined when unset. */
export function postgresUrl(defaultText: string): RuleParts<string | undefined> {
  return optionalMatching(
    defaultText,
    /^postgres(ql)?:\/\//,
    (name) => `${name} must start with postgres:// or postgresql://`,
  );
}

/**
 * A PostgreSQL schema name as a plain lowercase identifier (it goes into `search_path`
 * unquoted, so nothing is folded or needs quoting), or undefined when unset.
 */
export function schemaName(defaultText: string): RuleParts<string | undefined> {
  return optionalMatching(
    defaultText,
    /^[a-z_][a-z0-9_]{0,62}$/,
    (name) =>
      `${name} must be a plain schema name: lowercase letters, digits and _, starting with a letter or _, at most 63 characters (such as listings_demo)`,
  );
}

/** Comma-separated values (blank ones dropped); empty when unset. */
export function list(): RuleParts<readonly string[]> {
  return {
    default: undefined,
    rule: () =>
      z
        .string()
        .optional()
        .transform((value) =>
          Object.freeze(
            (value ?? '')
              .split(',')
              .map((item) => item.trim())
              .filter(Boolean),
          ),
        ),
  };
}

/** One of `values` (case aside). */
export function oneOf<const V extends readonly [string, ...string[]]>(
  values: V,
  fallback: V[number],
): RuleParts<V[number]> {
  return {
    default: fallback,
    defaultText: fallback,
    rule: (name) =>
      z
        .string()
        .optional()
        .transform((value) => trimmed(value)?.toLowerCase() ?? fallback)
        .pipe(z.enum(values, { error: `${name} must be one of ${values.join(', ')}` })),
  };
}

/**
 * Text that `valid` accepts (else `message(name)`), once `normalise`d; `fallback` when
 * unset or blank.
 */
function checkedText(
  fallback: string,
  valid: (value: string) => boolean,
  message: (name: string) => string,
  normalise: (value: string) => string = (value) => value,
): RuleParts<string> {
  const parts = text(fallback);
  return {
    ...parts,
    rule: (name) =>
      parts
        .rule(name)
        .transform(normalise)
        .refine(valid, { message: message(name) }),
  };
}

/** A cron expression of 5 or 6 fields, or `off`. */
export function cron(fallback: string): RuleParts<string> {
  return checkedText(
    fallback,
    (value) => value === 'off' || (/^(\S+\s+){4,5}\S+$/.test(value) && isValidCron(value)),
    (name) => `${name} must be a cron expression of 5 or 6 fields, such as "0 3 * * *", or "off"`,
    (value) => (value.toLowerCase() === 'off' ? 'off' : value),
  );
}

/** An IANA time zone. */
export function timeZone(fallback: string): RuleParts<string> {
  return checkedText(
    fallback,
    (value) => {
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: value });
        return true;
      } catch {
        return false;
      }
    },
    (name) => `${name} must be an IANA time zone such as "UTC" or "Europe/Berlin"`,
  );
}

/** An address to listen on: an IPv4 or IPv6 literal (`0.0.0.0`, `127.0.0.1`, `::`). */
export function listenAddress(fallback: string): RuleParts<string> {
  return checkedText(
    fallback,
    (value) => isIP(value) !== 0,
    (name) =>
      `${name} must be an IP address to listen on, such as 0.0.0.0 (every interface) or 127.0.0.1 (this machine only)`,
  );
}
