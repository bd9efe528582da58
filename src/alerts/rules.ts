/**
 * Alert rules as code: the `ALERT_RULES_FILE` schema and loader live with the
 * configuration (src/config/alert-rules.ts; docs/alerts.md, "Alert rules"), which is
 * read once at start. The alert code imports them from here.
 */
export {
  ALERT_RULE_KINDS,
  ALERT_RULES_FILE_MAX_BYTES,
  type AlertRules,
  AlertRulesError,
  type AlertRulesFile,
  DEFAULT_ALERT_RULES,
  loadAlertRulesFile,
  parseAlertRules,
  readAlertRulesFile,
} from '../config/alert-rules.ts';
