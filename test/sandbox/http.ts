/**
 * A tiny HTTP client for the sandbox suites: real requests over the loopback, the
 * credential's auth query parameters added, the body returned parsed when it is JSON.
 */
import type { SandboxCredential } from '../../src/sandbox/server.ts';

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions walk arbitrary JSON.
  json: any;
}

export interface CallOptions {
  query?: Record<string, string>;
  body?: unknown;
  /** Send the body as form data instead of JSON. */
  form?: boolean;
  /** Omit the auth parameters. */
  anonymous?: boolean;
  timeoutMs?: number;
}

export async function call(
  credential: SandboxCredential,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<Answer> {
  const url = new URL(`${credential.baseUrl}/api/v2${path}`);
  if (!options.anonymous) {
    url.searchParams.set('auth_token', credential.authToken);
    url.searchParams.set('user_email', credential.userEmail);
  }
  for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
  const init: RequestInit = { method, signal: AbortSignal.timeout(options.timeoutMs ?? 10_000) };
  if (options.body !== undefined) {
    init.headers = {
      'content-type': options.form ? 'application/x-www-form-urlencoded' : 'application/json',
    };
    init.body = options.form
      ? new URLSearchParams(options.body as Record<string, string>).toString()
      : JSON.stringify(options.body);
  }
  const response = await fetch(url, init);
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Plain JSON against the control surface. */
export async function control(
  baseUrl: string,
  method: string,
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: test assertions walk arbitrary JSON.
): Promise<{ status: number; json: any }> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, json: await response.json() };
}

/** A valid create payload; override fields per test. */
export function validBusiness(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Sandbox Test Plumbing',
    street: '100 Congress Ave',
    city: 'Austin',
    state_id: 44,
    country_id: 1,
    postal_code: '78701',
    phone: '512-555-0199',
    sub_category_id: 1,
    description: 'A'.repeat(50) + ' plumbing services for homes and small businesses. '.repeat(4),
    ...overrides,
  };
}
