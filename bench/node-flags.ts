/**
 * The V8 flags production runs the CLI with: the process entry's (bin/listings-sync.mjs,
 * the one place they are written; every route that starts the CLI goes through it), so
 * that what the benches measure is what a pod runs.
 */
import { NODE_FLAGS } from '../bin/listings-sync.mjs';

export function productionNodeFlags(): string[] {
  return [...NODE_FLAGS];
}
