/**
 * The Airbyte image's command, run as Airbyte runs it (docs/airbyte.md, "The image"):
 * `$AIRBYTE_ENTRYPOINT spec` as a real process from the image's working directory (the
 * repository's root holds what the image's /app does), and its CMD alone.
 */
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { dockerStage, pairs } from './connector-files.ts';
import { protocolLines } from './protocol-definitions.ts';

function run(argv: string[]): Promise<{ code: number | null; stdout: string }> {
  const [command, ...args] = argv;
  // The image's `node` is the Node 24 this test runs on.
  const child = spawn(command === 'node' ? process.execPath : command!, args, {
    env: { PATH: process.env.PATH ?? '', TMPDIR: tmpdir() },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout })));
}

describe('the airbyte target as Airbyte runs it', () => {
  const stage = dockerStage('airbyte');
  const env = pairs(stage.filter((l) => l.startsWith('ENV ')).join(' '));

  it('$AIRBYTE_ENTRYPOINT spec prints one SPEC and exits 0', async () => {
    const { code, stdout } = await run([...env.AIRBYTE_ENTRYPOINT!.split(' '), 'spec']);
    expect(code).toBe(0);
    expect(protocolLines(stdout).map((m) => m.type)).toEqual(['SPEC']);
  });

  it('its CMD alone (no command given) prints the help and exits 0', async () => {
    const entrypoint = JSON.parse(
      stage.find((l) => l.startsWith('ENTRYPOINT '))!.slice('ENTRYPOINT '.length),
    ) as string[];
    const cmd = JSON.parse(
      stage.find((l) => l.startsWith('CMD '))!.slice('CMD '.length),
    ) as string[];
    const { code, stdout } = await run([...entrypoint, ...cmd]);
    expect(code).toBe(0);
    expect(stdout).toContain('spec');
  });
});
