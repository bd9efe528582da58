/**
 * The process's environment: the one place it is read (src/cli/process-io.ts hands it to
 * every command as `io.env`, src/cli/main.ts to the compile cache before any other module
 * loads; everything else parses what it is given). A module of its own, importing nothing,
 * so that the process entry can read it before the configuration's modules load.
 */
export function processEnvironment(): Record<string, string | undefined> {
  return process.env;
}
