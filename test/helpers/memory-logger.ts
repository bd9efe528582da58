import { createLogger, type Logger } from '../../src/log.ts';

/**
 * A logger that keeps its lines in memory, for tests that assert what must or must not
 * be logged: the project's logger (its redaction included) writing to an array.
 */
export function memoryLogger(level = 'debug'): { logger: Logger; lines: () => string[] } {
  const chunks: string[] = [];
  const destination = { write: (chunk: string) => void chunks.push(chunk) };
  const logger = createLogger({ level, destination });
  return { logger, lines: () => chunks.join('').split('\n').filter(Boolean) };
}
