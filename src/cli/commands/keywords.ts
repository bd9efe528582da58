/** `listings-sync keywords apply --file F [--dry-run]`: keywords as code (src/cli/workflows/keywords-apply.ts). */
import type { Command } from 'commander';
import type { CliIo } from '../command/io.ts';
import { accountOption, action, workflowIo } from '../workflows/command-context.ts';
import { type ApplyOptions, runKeywordsApply } from '../workflows/keywords-apply.ts';

export function registerKeywordsCommand(program: Command, cliIo: CliIo): Command {
  const io = workflowIo(cliIo, 'keywords');
  const keywords = program
    .command('keywords')
    .description('Keywords as code: make businesses’ keywords match a file.');
  accountOption(
    keywords
      .command('apply')
      .description(
        'Add the keywords the file lists and delete the others, per listed business; prints the plan first.',
      )
      .requiredOption('--file <file>', 'the keywords file (`-`: standard input)')
      .option('--dry-run', 'print the plan and change nothing'),
  ).action(action(io, async (options: ApplyOptions) => runKeywordsApply(io, options)));
  return keywords;
}
