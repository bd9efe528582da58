/**
 * `listings-sync config`: the effective configuration, and where each value came from
 * (the environment, the credentials file, or the default). Secrets are masked: a set
 * secret shows as `[set, N characters]`, a URL with its password replaced. The rows come
 * from src/config/ (configRows, credentialRows).
 */
import { type Config, configRows, credentialRows } from './config/index.ts';
import { renderTable } from './sync/summary.ts';

export function renderConfig(config: Config): string {
  const parts = [renderTable(['variable', 'value', 'source'], configRows(config))];
  if (config.credentials.length) {
    const { header, rows } = credentialRows(config);
    parts.push(renderTable(header, rows));
  } else {
    parts.push('No credentials configured.');
  }
  if (config.warnings.length) parts.push(config.warnings.map((w) => `warning: ${w}`).join('\n'));
  return `${parts.join('\n\n')}\n`;
}
