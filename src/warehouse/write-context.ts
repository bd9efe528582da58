import type { AlertRules } from '../alerts/rules.ts';

/** What every per-business writer needs to know about the write it is part of. */
export interface BusinessWriteContext {
  accountName: string;
  businessId: number;
  runId: string;
  /** The run's observation time: first_seen_at/last_seen_at/history rows use it. */
  observedAt: Date;
  /** The alert rules the writers raise under; the built-in defaults when absent. */
  alertRules?: AlertRules;
}
