/**
 * The V8 flags production runs the CLI with, read off its shebang line (src/cli/main.ts;
 * the Dockerfile and `npm start` pass the same, test/deploy/k8s-manifests.test.ts holds them to
 * it), so that what the benches measure is what a pod runs.
 */
import { readFileSync } from 'node:fs';

export function productionNodeFlags(): string[] {
  const cli = readFileSync(new URL('../src/cli/main.ts', import.meta.url), 'utf8');
  return (/^#!.*?node\s+(.*)$/m.exec(cli)?.[1] ?? '')
    .split(/\s+/)
    .filter((flag) => flag.startsWith('--'));
}
