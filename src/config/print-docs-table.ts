/**
 * Prints docs/configuration.md's "Settings" table from the table of settings:
 * `npx node src/config/print-docs-table.ts`, then paste it over the old one
 * (test/meta/settings-docs.test.ts holds the two equal).
 */
import { settingsMarkdown } from './render.ts';

process.stdout.write(`${settingsMarkdown()}\n`);
