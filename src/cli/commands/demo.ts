/** `listings-sync demo` (`npm start`): the whole product on this machine (src/demo.ts). */
import type { Command } from 'commander';
import { EXIT } from '../../command/exit-codes.ts';
import type { CliIo } from '../../command/io.ts';
import { createCommandLogger } from '../../command/logger.ts';
import { loadCommandConfig } from '../../command/settings-bridge.ts';

export function registerDemoCommand(program: Command, io: CliIo): void {
  program
    .command('demo')
    .description(
      'Show the whole product on this machine: a sandbox, an embedded warehouse, a report.',
    )
    .action(async () => {
      const config = loadCommandConfig(io, 'demo');
      const logger = createCommandLogger(io, config);
      const { DEMO_DATA_DIR, runDemo } = await import('../../demo.ts');
      // A test running the command in-process hands it the warehouse of the demo's directory.
      const given = config.databaseUrl
        ? undefined
        : await io.services?.openWarehouse?.(config, {
            pgliteDataDir: DEMO_DATA_DIR,
            description: `the demo's embedded PGlite database in ${DEMO_DATA_DIR}`,
            demo: true,
          });
      const result = await runDemo(config, logger, {
        ...(given ? { warehouse: given } : {}),
        endDate: io.now().toISOString().slice(0, 10),
        write: (line) => io.stdout(`${line}\n`),
        signal: io.signal,
        ...(io.terminal ? { terminal: io.terminal } : {}),
      });
      // A day that did not sync cleanly, or a demo stopped early, is partial.
      const complete = !io.signal.aborted && result.syncs.every((s) => s.status === 'succeeded');
      io.exitCode = complete ? EXIT.ok : EXIT.partial;
    });
}
