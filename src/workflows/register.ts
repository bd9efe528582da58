/** The workflow commands, for `src/cli.ts`: `api …` and `keywords apply`. */
import type { Command } from 'commander';
import { registerApiCommands } from './api-command.ts';
import { defaultWorkflowIo, type WorkflowIo } from './command-context.ts';
import { registerKeywordsCommand } from './keywords-apply.ts';

export { registerApiCommands } from './api-command.ts';
export { registerKeywordsCommand } from './keywords-apply.ts';

/** Adds `api` and `keywords` to the program. */
export function registerWorkflowCommands(
  program: Command,
  io: WorkflowIo = defaultWorkflowIo(),
): void {
  registerApiCommands(program, io);
  registerKeywordsCommand(program, io);
}
