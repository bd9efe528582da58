/**
 * What the table of settings shows people: the "Environment:" block of `--help`, the
 * rows of `listings-sync config` (secrets masked) and the table in docs/configuration.md
 * ("Settings"). The rows are plain strings: the command renders them.
 */
import { redactUrl } from '../log.ts';
import type { Config } from './load.ts';
import {
  COMMANDS,
  CONFIG_VARIABLES,
  type ConfigVariable,
  commandVariables,
  type Masking,
  type Setting,
  setting,
} from './settings.ts';

/** The meaning with its default, as `--help` shows it. */
function helpLine(entry: Setting): string {
  const fallback = entry.defaultText;
  if (!fallback) return entry.meaning;
  // "unset: the embedded PGlite", "required by `serve`" read as they are.
  return /^(unset|none|required)\b/.test(fallback)
    ? `${entry.meaning} (${fallback})`
    : `${entry.meaning} (default ${fallback})`;
}

/**
 * The "Environment:" block of a command's `--help`: the variables it reads, one line
 * each. No command: every variable (the root `--help`).
 */
export function environmentHelp(command?: string): string {
  return variablesHelp(command === undefined ? CONFIG_VARIABLES : commandVariables(command));
}

/** The "Environment:" block for these variables. */
export function variablesHelp(names: readonly ConfigVariable[]): string {
  if (names.length === 0) return '\nEnvironment: none.\n';
  const width = Math.max(...names.map((name) => name.length));
  return `\nEnvironment:\n${names
    .map((name) => `  ${name.padEnd(width)}  ${helpLine(setting(name))}`)
    .join('\n')}\n`;
}

function masked(secret: string): string {
  return `[set, ${secret.length} characters]`;
}

/** Webhook URLs carry their secret in the path (Slack): show the origin only. */
function maskedUrl(url: string): string {
  const parsed = URL.parse(url);
  return parsed ? `${parsed.origin}/[REDACTED]` : '[set]';
}

function mask(how: Masking, value: unknown): string {
  switch (how) {
    case 'whole':
      return masked(String(value));
    case 'list': {
      const list = value as readonly string[];
      return list.length ? `[${list.length} secret(s) set]` : '(unset)';
    }
    case 'url-path':
      return maskedUrl(String(value));
    case 'url-password':
      return redactUrl(String(value));
  }
}

/** The credential variables' values: they make `config.credentials`, not a field of their own. */
function credentialValue(config: Config, name: ConfigVariable): string | undefined {
  const inline = config.credentialsSource === 'environment' ? config.credentials[0] : undefined;
  switch (name) {
    case 'LISTINGS_CREDENTIALS_FILE':
      return config.credentialsSource === 'environment' || config.credentialsSource === 'none'
        ? undefined
        : config.credentialsSource;
    case 'LISTINGS_BASE_URL':
      return inline?.baseUrl;
    case 'LISTINGS_AUTH_TOKEN':
      return inline?.authToken;
    case 'LISTINGS_USER_EMAIL':
      return inline?.userEmail;
    default:
      return undefined;
  }
}

/** One row per variable for `listings-sync config`: variable, value (secrets masked), source. */
export function configRows(config: Config): string[][] {
  return CONFIG_VARIABLES.map((name) => {
    const entry = setting(name);
    const value =
      entry.field === null
        ? credentialValue(config, name)
        : (config as unknown as Record<string, unknown>)[entry.field];
    const show = entry.show as ((value: unknown) => string) | undefined;
    let shown: string;
    if (value === undefined) shown = show ? show(value) : '(unset)';
    else if (entry.secret) shown = mask(entry.secret, value);
    else shown = show ? show(value) : String(value);
    return [name, shown, config.sources[name]];
  });
}

/** The credentials for `listings-sync config`: tokens masked, base URLs without a password. */
export function credentialRows(config: Config): { header: string[]; rows: string[][] } {
  const from =
    config.credentialsSource === 'environment' ? 'env' : `file ${config.credentialsSource}`;
  return {
    header: ['credential', 'baseUrl', 'userEmail', 'authToken', 'source'],
    rows: config.credentials.map((c) => [
      c.name,
      redactUrl(c.baseUrl),
      c.userEmail,
      masked(c.authToken),
      from,
    ]),
  };
}

const MASKING_DOCS: Record<Masking, string> = {
  whole: 'yes: `config` shows its length only',
  list: 'yes: `config` shows how many',
  'url-path': 'yes: `config` shows the origin only',
  'url-password': 'its password: never printed',
};

/** The table of docs/configuration.md, "Settings" (a test holds the two equal). */
export function settingsMarkdown(): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const rows = CONFIG_VARIABLES.map((name) => {
    const entry = setting(name);
    const fallback = entry.defaultText ?? '—';
    // A default as it is written in the environment reads as code.
    const shown =
      entry.default !== undefined && fallback === String(entry.default)
        ? `\`${fallback}\``
        : fallback;
    const commands = COMMANDS.filter((c) => (entry.commands as readonly string[]).includes(c))
      .map((c) => `\`${c}\``)
      .join(', ');
    const secret = entry.secret ? MASKING_DOCS[entry.secret] : 'no';
    return `| \`${name}\` | ${cell(entry.doc ?? entry.meaning)} | ${cell(shown)} | ${secret} | ${commands} |`;
  });
  return [
    '| variable | meaning | default | secret | read by |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
