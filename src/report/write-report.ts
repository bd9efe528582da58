/** Reads the warehouse's views and writes the self-contained HTML report. */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Kysely } from 'kysely';
import type { Database } from '../warehouse/database.ts';
import { type ReportData, type ReportOptions, readReportData } from './report-data.ts';
import { renderReportHtml } from './report-html.ts';

export const DEFAULT_REPORT_PATH = 'report.html';
export const DEFAULT_REPORT_DAYS = 90;

export interface WrittenReport {
  /** Absolute path of the file written. */
  path: string;
  bytes: number;
  data: ReportData;
}

export async function writeReport(
  db: Kysely<Database>,
  options: Partial<ReportOptions> & { out?: string } = {},
): Promise<WrittenReport> {
  const data = await readReportData(db, { ...options, days: options.days ?? DEFAULT_REPORT_DAYS });
  const html = renderReportHtml(data);
  const path = resolve(options.out ?? DEFAULT_REPORT_PATH);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, html);
  return { path, bytes: Buffer.byteLength(html), data };
}
