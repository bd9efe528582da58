/**
 * DATABASE_URL passwords that must never be printed, each holding one or more of the
 * characters a URL reserves, and the stretches of each that would identify it. Shared by
 * test/unit/database-url-redaction.test.ts and test/warehouse/database-url-redaction.test.ts;
 * pure (no database, no process), so the unit project may import it.
 */
export const PASSWORDS = [
  'Zq1/Kx9',
  'Zq1#Kx9',
  'Zq1?Kx9',
  'Zq1@Kx9',
  'Zq1@Kx9/Wv3#Ty4?Rb5',
  'PlainS3cretZq',
];

/** Every stretch of the password that could identify it: the whole, and each side of a reserved char. */
export function fragments(password: string): string[] {
  return [password, ...password.split(/[/#?@]/).filter((part) => part.length >= 2)];
}
