/**
 * The Airbyte source's configuration (docs/airbyte.md, "Configuration"): the credentials,
 * by the credentials file's rules, which streams to offer, and the sync's limits, each
 * one of the settings of src/config/settings.ts under its name in lower case. The spec's
 * JSON schema derives from the same table, so a limit has one default and one rule.
 */
import { readFileSync } from 'node:fs';
import { parseCredentialList } from '../config/credentials.ts';
import type { Credential } from '../config/index.ts';
import {
  ANSWER_BOUND_SETTINGS,
  type Config,
  ConfigError,
  type ConfigVariable,
  loadConfig,
  SETTINGS,
  type Setting,
} from '../config/index.ts';
import type { JsonSchema } from './protocol.ts';
import { STREAM_NAMES, type StreamName } from './streams.ts';

/** The settings a source reads: what bounds and paces the upstream (every answer bound), nothing of a database. */
const LIMITS = [
  'SYNC_CONCURRENCY',
  'SYNC_ACCOUNT_CONCURRENCY',
  'SYNC_REQUESTS_PER_SECOND',
  'LISTINGS_REQUEST_TIMEOUT_SECONDS',
  'LISTINGS_MAX_BODY_BYTES',
  ...Object.values(ANSWER_BOUND_SETTINGS),
] as const satisfies readonly ConfigVariable[];

const keyOf = (name: ConfigVariable) => name.toLowerCase();

export interface SourceConfig {
  credentials: Credential[];
  streams: StreamName[];
  /** The limits as the rest of the program reads them. */
  config: Config;
  /**
   * Keys of the configuration the source does not read (`"_extra"`, `"credentials[0].note"`):
   * ignored, as Airbyte's specs are open, and named in a LOG at warn.
   */
  ignored: string[];
}

const CREDENTIAL_KEYS = ['name', 'baseUrl', 'authToken', 'userEmail'];

/*
 * The credentials file's rules (src/config/credentials.ts) as JSON schema patterns, so that
 * what the spec accepts `check` accepts: a name of 1-63 letters, digits, ".", "_" or "-";
 * a base URL of http(s), no query or fragment, not ending in /api/v2; an e-mail address.
 * Two entries of one name or one account are refused by `check` alone (no JSON schema
 * keyword compares fields of different items).
 */
const CREDENTIAL_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$';
const BASE_URL_PATTERN = '^[Hh][Tt][Tt][Pp][Ss]?://(?![^?#]*/api/v2(\\.json)?/*$)[^?#\\s]+$';
const USER_EMAIL_PATTERN = '^[^@\\s]+@[^@\\s]+$';

/** `spec`'s connectionSpecification: a JSON schema (draft-07) of the configuration. */
export function configSchema(): JsonSchema {
  const limits = Object.fromEntries(
    LIMITS.map((name) => {
      const entry: Setting = SETTINGS[name];
      if (!entry.bounds) throw new Error(`${name} states no range for the spec`);
      return [
        keyOf(name),
        {
          // Every limit is a whole number (the setting's rule), so the spec says integer.
          type: 'integer',
          title: name,
          description: `${entry.meaning} (the ${name} setting of docs/configuration.md)`,
          minimum: entry.bounds.min,
          maximum: entry.bounds.max,
          ...(entry.default === undefined ? {} : { default: Number(entry.default) }),
        },
      ];
    }),
  );
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'listings-sync source',
    type: 'object',
    required: ['credentials'],
    properties: {
      credentials: {
        type: 'array',
        title: 'Credentials',
        description:
          'One entry per account of the Business Listings Management Service, as in a LISTINGS_CREDENTIALS_FILE.',
        minItems: 1,
        order: 0,
        items: {
          type: 'object',
          required: ['name', 'baseUrl', 'authToken', 'userEmail'],
          properties: {
            name: {
              type: 'string',
              title: 'Name',
              description:
                'A short label for the account, e.g. agency-east; it is each record\'s "account".',
              pattern: CREDENTIAL_NAME_PATTERN,
            },
            baseUrl: {
              type: 'string',
              title: 'Base URL',
              description: 'Everything before /api/v2, e.g. https://listings.example.com',
              format: 'uri',
              pattern: BASE_URL_PATTERN,
            },
            authToken: {
              type: 'string',
              title: 'Auth token',
              description: "The account's API token.",
              minLength: 1,
              airbyte_secret: true,
            },
            userEmail: {
              type: 'string',
              title: 'User e-mail',
              description: 'The e-mail the token belongs to.',
              pattern: USER_EMAIL_PATTERN,
            },
          },
        },
      },
      streams: {
        type: 'array',
        title: 'Streams',
        description: 'Which streams discover offers and read reads; all of them when unset.',
        items: { type: 'string', enum: [...STREAM_NAMES] },
        uniqueItems: true,
        order: 1,
      },
      ...limits,
    },
  };
}

/** The configuration in a file given to `check`, `discover` or `read` as `--config`. */
export function readSourceConfigFile(path: string): SourceConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError(
      `--config names "${path}", which cannot be read (${(cause as NodeJS.ErrnoException).code ?? 'error'}).`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // Not the parser's message: it quotes the text around the error, perhaps a token.
    throw new ConfigError(`--config "${path}" is not valid JSON.`);
  }
  return parseSourceConfig(json);
}

/** Checks a configuration by the spec and the rules of each setting; errors name the key. */
export function parseSourceConfig(json: unknown): SourceConfig {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ConfigError('The configuration must be a JSON object with a "credentials" list.');
  }
  const value = json as Record<string, unknown>;
  const known = new Set(['credentials', 'streams', ...LIMITS.map(keyOf)]);
  const ignored = Object.keys(value).filter((key) => !known.has(key));
  if (!Array.isArray(value.credentials)) {
    throw new ConfigError(
      'credentials is required: a list of {name, baseUrl, authToken, userEmail}, one per account.',
    );
  }
  // An entry's keys beyond the four are ignored too (the credentials file's rules are strict).
  const entries = value.credentials.map((entry: unknown, i) => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return entry;
    const fields = entry as Record<string, unknown>;
    for (const key of Object.keys(fields)) {
      if (!CREDENTIAL_KEYS.includes(key)) ignored.push(`credentials[${i}].${key}`);
    }
    return Object.fromEntries(
      CREDENTIAL_KEYS.filter((k) => k in fields).map((k) => [k, fields[k]]),
    );
  });
  const credentials = parseCredentialList(entries, 'credentials is not valid');
  const streams = parseStreams(value.streams);
  const env: Record<string, string> = {};
  for (const name of LIMITS) {
    const given = value[keyOf(name)];
    if (given === undefined || given === null) continue;
    if (typeof given !== 'number') {
      throw new ConfigError(`${keyOf(name)} must be a number (got ${JSON.stringify(given)}).`);
    }
    env[name] = String(given);
  }
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // The rules name the setting; the configuration calls it by its key.
    let message = error.message;
    for (const name of LIMITS) message = message.replaceAll(name, keyOf(name));
    throw new ConfigError(message);
  }
  return { credentials, streams, config, ignored };
}

function parseStreams(given: unknown): StreamName[] {
  if (given === undefined || given === null) return [...STREAM_NAMES];
  if (!Array.isArray(given) || given.some((name) => typeof name !== 'string')) {
    throw new ConfigError(`streams must be a list of stream names: ${STREAM_NAMES.join(', ')}.`);
  }
  const unknown = given.filter((name) => !(STREAM_NAMES as readonly string[]).includes(name));
  if (unknown.length) {
    throw new ConfigError(
      `streams names ${unknown.map((n) => `"${n}"`).join(', ')}, which the source does not have; ` +
        `its streams are ${STREAM_NAMES.join(', ')}.`,
    );
  }
  const twice = given.filter((name, i) => given.indexOf(name) !== i);
  if (twice.length) {
    throw new ConfigError(
      `streams names ${[...new Set(twice)].map((n) => `"${n}"`).join(', ')} more than once; name each stream once.`,
    );
  }
  return STREAM_NAMES.filter((name) => given.includes(name));
}
