/**
 * The plain-text table every command prints (sync summary, runs, check, alerts, config,
 * `api --format table`): a header, a rule of dashes, then the rows. Columns holding only
 * numbers align right, text left; the first column is a label, left-aligned, unless the
 * caller asks otherwise (a list of records whose first column is an id).
 */
export interface TableOptions {
  /** Right-align the first column too when it holds only numbers. */
  numericFirstColumn?: boolean;
}

/** A number, or a cell standing for one: empty, `–`, `-`, `1,204`, `-3.5`. */
const NUMERIC = /^(-?\d[\d.,]*|[–-]?)$/;

export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly (string | number)[])[],
  options: TableOptions = {},
): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  const numeric = headers.map(
    (_, i) =>
      (i > 0 || options.numericFirstColumn === true) &&
      rows.every((row) => typeof row[i] === 'number' || NUMERIC.test(String(row[i] ?? ''))),
  );
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (numeric[i] ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.slice(1).map(line)].join(
    '\n',
  );
}
