/**
 * The exit codes of every command (README.md, "Commands"): 0 success, 1 fatal (bad
 * configuration, database unreachable, an upstream error), 2 usage, 3 partial (some
 * credentials, businesses or records failed; the rest committed).
 */

import { EXIT } from '../../errors.ts';
import type { SyncRunStatus } from '../../warehouse/runs/sync-runs.ts';

export { EXIT };

/** A sync run's status as an exit code: an interrupted run committed what it finished. */
export const EXIT_FOR_STATUS: Record<Exclude<SyncRunStatus, 'running'>, number> = {
  succeeded: EXIT.ok,
  partial: EXIT.partial,
  interrupted: EXIT.partial,
  failed: EXIT.fatal,
};
