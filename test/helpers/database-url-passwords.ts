/**
 * DATABASE_URL passwords that must never be printed, each holding one or more of the
 * characters a URL reserves, and the stretches of each that would identify it. Shared by
 * test/log/database-url-redaction.test.ts, test/log/database-url-readable.test.ts,
 * test/warehouse/database-url-redaction.test.ts and
 * test/warehouse/database-url-messages.test.ts; pure (no database, no process), so the
 * unit project may import it.
 */

/** Passwords a URL holds as written (an unencoded `@` still parses: the last one ends the password). */
export const PASSWORDS = ['Zq1@Kx9', 'PlainS3cretZq'];

/**
 * Passwords that make `postgres://user:<password>@host/db` unparseable, or parse with the
 * host taken from inside the password: configuration loading refuses such a DATABASE_URL.
 */
export const UNPARSEABLE_PASSWORDS = ['Zq1/Kx9', 'Zq1#Kx9', 'Zq1?Kx9', 'Zq1@Kx9/Wv3#Ty4?Rb5'];

/** Every stretch of the password that could identify it: the whole, and each side of a reserved char. */
export function fragments(password: string): string[] {
  return [password, ...password.split(/[/#?@]/).filter((part) => part.length >= 2)];
}
