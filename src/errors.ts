/**
 * The base of every error the program raises on purpose (docs/running.md, "Error codes"):
 * a stable `code` a caller can branch on, and the exit code a command that fails with it
 * leaves. Imports nothing of ours, so every folder may import it.
 */

/** The exit codes (README.md, "Commands"): 0 success, 1 fatal, 2 usage, 3 partial. */
export const EXIT = { ok: 0, fatal: 1, usage: 2, partial: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export abstract class ListingsSyncError extends Error {
  /** Stable, upper snake case: part of the documented contract. */
  abstract readonly code: string;
  /** What a command that fails with this error exits with; fatal unless a class says. */
  readonly exitCode: ExitCode = EXIT.fatal;

  constructor(message?: string, options?: ErrorOptions) {
    super(message, options);
    // Each error is named by its class (`ConfigError: …` in a stack), said once here.
    this.name = new.target.name;
  }
}

/**
 * The first `code` (a SQLSTATE, an errno name) on an error or along its `cause` chain that
 * `wanted` accepts: drivers and Kysely wrap the database's error in their own.
 */
export function codeInChain(error: unknown, wanted: (code: string) => boolean): string | undefined {
  for (let e: unknown = error, depth = 0; e && typeof e === 'object' && depth < 8; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && wanted(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
