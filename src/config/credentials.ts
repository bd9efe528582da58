/**
 * API credentials: a JSON file of several (LISTINGS_CREDENTIALS_FILE), or one from three
 * variables. Errors name the file and the entry, and never repeat a token.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { withoutUserinfo } from '../log.ts';
import { ConfigError } from './errors.ts';
import { jsonErrorPosition } from './json-position.ts';
import { httpUrl } from './rules.ts';

/** One API credential: `baseUrl` is everything before `/api/v2`. */
export interface Credential {
  name: string;
  baseUrl: string;
  authToken: string;
  userEmail: string;
}

const CREDENTIAL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

const credentialSchema = z
  .object({
    name: z
      .string({ error: 'name is required (a short label such as "agency-east")' })
      .regex(CREDENTIAL_NAME, 'name must be 1-63 letters, digits, ".", "_" or "-"'),
    baseUrl: httpUrl('baseUrl')
      .transform((value) => value.replace(/\/+$/, ''))
      .refine((value) => !/\/api\/v2(\.json)?$/.test(value), {
        message: 'baseUrl must be everything before /api/v2 (remove the trailing /api/v2)',
      })
      // The path is appended to it, and it is stored in accounts.base_url: a query would
      // break every request's path and could carry a token into a table.
      .refine(
        (value) => {
          const url = URL.parse(value);
          return !url || (url.search === '' && url.hash === '' && !/[?#]/.test(value));
        },
        {
          message:
            'baseUrl must be everything before /api/v2, with no query (?…) or fragment (#…): the token goes in authToken',
        },
      ),
    authToken: z.string({ error: 'authToken is required' }).min(1, 'authToken must not be empty'),
    userEmail: z
      .string({ error: 'userEmail is required' })
      .regex(/^[^@\s]+@[^@\s]+$/, 'userEmail must be an e-mail address'),
  })
  .strict();

/**
 * The upstream account a credential reaches: its base URL (host case, userinfo and a
 * trailing slash aside) and its e-mail (case aside). Two credentials of one account
 * would write every business twice (two `business_versions` rows per change).
 */
function accountIdentity(credential: { baseUrl: string; userEmail: string }): string {
  const url = URL.parse(withoutUserinfo(credential.baseUrl));
  // Not a URL: its own rule says so; the text itself is the identity meanwhile.
  if (!url) return `${credential.baseUrl} ${credential.userEmail.trim().toLowerCase()}`;
  const base = `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}${url.search}`;
  return `${base} ${credential.userEmail.trim().toLowerCase()}`;
}

const credentialsFileSchema = z
  .array(credentialSchema, { error: 'the file must hold a JSON array of credentials' })
  .min(1, 'the file must list at least one credential')
  .superRefine((list, ctx) => {
    const seen = new Set<string>();
    const accounts = new Map<string, string>();
    list.forEach((credential, index) => {
      if (seen.has(credential.name)) {
        ctx.addIssue({
          code: 'custom',
          path: [index, 'name'],
          message: `name "${credential.name}" is used twice; each credential needs its own name`,
        });
      }
      seen.add(credential.name);
      const identity = accountIdentity(credential);
      const first = accounts.get(identity);
      if (first !== undefined && first !== credential.name) {
        ctx.addIssue({
          code: 'custom',
          path: [index],
          message:
            `credentials "${first}" and "${credential.name}" are the same account ` +
            `(baseUrl ${withoutUserinfo(credential.baseUrl)}, userEmail ${credential.userEmail}); ` +
            'keep one of them, or every business of that account is synced and versioned twice',
        });
      } else if (first === undefined) accounts.set(identity, credential.name);
    });
  });

export function describeIssues(error: z.ZodError, prefix = ''): string {
  return error.issues
    .map((issue) => {
      const where = issue.path.length ? `${prefix}${issue.path.join('.')}: ` : prefix;
      return `  - ${where}${issue.message}`;
    })
    .join('\n');
}

/** The credential variables, parsed (trimmed; undefined when blank). */
export interface CredentialVariables {
  LISTINGS_CREDENTIALS_FILE: string | undefined;
  LISTINGS_BASE_URL: string | undefined;
  LISTINGS_AUTH_TOKEN: string | undefined;
  LISTINGS_USER_EMAIL: string | undefined;
}

/** The credentials and where they came from: the file's path, `environment`, or `none`. */
export function readCredentials(env: CredentialVariables): {
  credentials: Credential[];
  source: string;
} {
  const file = env.LISTINGS_CREDENTIALS_FILE;
  const inline = [env.LISTINGS_BASE_URL, env.LISTINGS_AUTH_TOKEN, env.LISTINGS_USER_EMAIL];
  const inlineGiven = inline.some((value) => value !== undefined);
  if (file && inlineGiven) {
    throw new ConfigError(
      'Both LISTINGS_CREDENTIALS_FILE and LISTINGS_BASE_URL/LISTINGS_AUTH_TOKEN/LISTINGS_USER_EMAIL are set. ' +
        'Use one: the file for several credentials, the three variables for one.',
    );
  }
  if (file) return { credentials: readCredentialsFile(file), source: file };
  if (inlineGiven) {
    const missing = (
      [
        ['LISTINGS_BASE_URL', env.LISTINGS_BASE_URL],
        ['LISTINGS_AUTH_TOKEN', env.LISTINGS_AUTH_TOKEN],
        ['LISTINGS_USER_EMAIL', env.LISTINGS_USER_EMAIL],
      ] as const
    )
      .filter(([, value]) => value === undefined)
      .map(([name]) => name);
    if (missing.length) {
      throw new ConfigError(
        `${missing.join(' and ')} ${missing.length === 1 ? 'is' : 'are'} not set. ` +
          'LISTINGS_BASE_URL, LISTINGS_AUTH_TOKEN and LISTINGS_USER_EMAIL go together.',
      );
    }
    const parsed = credentialSchema.safeParse({
      name: 'default',
      baseUrl: env.LISTINGS_BASE_URL,
      authToken: env.LISTINGS_AUTH_TOKEN,
      userEmail: env.LISTINGS_USER_EMAIL,
    });
    if (!parsed.success) {
      const text = describeIssues(parsed.error)
        .replace('baseUrl', 'LISTINGS_BASE_URL')
        .replace('userEmail', 'LISTINGS_USER_EMAIL')
        .replace('authToken', 'LISTINGS_AUTH_TOKEN');
      throw new ConfigError(`The credential from the environment is not valid:\n${text}`);
    }
    return { credentials: [parsed.data], source: 'environment' };
  }
  return { credentials: [], source: 'none' };
}

function readCredentialsFile(file: string): Credential[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    throw new ConfigError(
      `LISTINGS_CREDENTIALS_FILE names "${file}", which cannot be read (${(cause as NodeJS.ErrnoException).code ?? 'error'}). ` +
        'Point it at a JSON file holding an array of {name, baseUrl, authToken, userEmail}.',
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // Not the parser's message: it quotes the text around the error, perhaps a token.
    const at = jsonErrorPosition(text);
    throw new ConfigError(
      `LISTINGS_CREDENTIALS_FILE "${file}" is not valid JSON: line ${at.line}, column ${at.column}, ` +
        `in: ${at.excerpt}\nIt must hold an array of {name, baseUrl, authToken, userEmail}.`,
    );
  }
  return parseCredentialList(
    json,
    `LISTINGS_CREDENTIALS_FILE "${file}" is not a valid credentials file`,
  );
}

/**
 * A list of credentials given as data, by the credentials file's rules (an Airbyte
 * config's `credentials`, docs/airbyte.md); `what` opens the error.
 */
export function parseCredentialList(list: unknown, what: string): Credential[] {
  const parsed = credentialsFileSchema.safeParse(list);
  if (!parsed.success) {
    throw new ConfigError(`${what}:\n${describeIssues(parsed.error, 'entry ')}`);
  }
  return parsed.data;
}
