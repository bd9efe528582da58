/**
 * How the `api` commands print a result: JSON of the client's normalised values (the
 * default, for scripts and `jq`), or with `--format table` a table for a person: a list
 * of records as rows, one record as field/value lines. Dates print as ISO strings.
 */
import { renderTable } from '../../text-table.ts';
import { UsageError } from '../../usage-error.ts';

export type OutputFormat = 'json' | 'table';

export function parseFormat(value: string | undefined): OutputFormat {
  if (value === undefined || value === 'json') return 'json';
  if (value === 'table') return 'table';
  throw new UsageError(`--format takes json or table (got "${value}").`);
}

/** Widest cell of a table before it is cut short with `…`. */
const MAX_CELL = 60;

function cell(value: unknown): string {
  let text: string;
  if (value === null || value === undefined) text = '';
  else if (value instanceof Date) text = value.toISOString();
  else if (Array.isArray(value) && value.every((v) => typeof v !== 'object' || v === null))
    text = value.join(', ');
  else if (Array.isArray(value)) text = `${value.length} item${value.length === 1 ? '' : 's'}`;
  else if (typeof value === 'object') text = JSON.stringify(value);
  else text = String(value);
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 1)}…` : text;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date)
  );
}

/** A table of records (columns in first-seen order), or field/value lines for one record. */
export function renderValueTable(value: unknown): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return '(none)';
    if (!value.every(isPlainObject)) return value.map(cell).join('\n');
    const columns: string[] = [];
    for (const record of value) {
      for (const key of Object.keys(record)) if (!columns.includes(key)) columns.push(key);
    }
    return renderTable(
      columns,
      value.map((record) => columns.map((column) => cell(record[column]))),
      { numericFirstColumn: true },
    );
  }
  if (isPlainObject(value)) {
    return renderTable(
      ['field', 'value'],
      Object.entries(value).map(([key, inner]) => [key, cell(inner)]),
      { numericFirstColumn: true },
    );
  }
  return cell(value);
}

export function renderOutput(value: unknown, format: OutputFormat): string {
  return format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : `${renderValueTable(value)}\n`;
}
