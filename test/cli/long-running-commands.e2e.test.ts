/**
 * Long-running commands as the documents start them. npx does not pass a signal on to the
 * program it runs: `kill -TERM` on `npx listings-sync serve` ended npx with 143 and left
 * the Node server orphaned, still holding its port. So no document starts `serve` or
 * `sandbox` under npx, and the documented background `serve` line, run by a real shell
 * and sent SIGTERM the way `kill -TERM %1` does, exits 0 and frees its port.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import { cliCacheEnv, waitForStdout } from '../helpers/cli.ts';
import { createPgliteDataDir } from '../helpers/database.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const LONG_RUNNING = /\b(?:npx|npm exec)\s+(?:--\s+)?listings-sync\s+(serve|sandbox)\b/;

/** Each line of each fenced code block of a markdown file. */
function codeLines(file: string): { where: string; line: string }[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out: { where: string; line: string }[] = [];
  let inBlock = false;
  text.split('\n').forEach((line, i) => {
    if (line.startsWith('```')) inBlock = !inBlock;
    else if (inBlock) out.push({ where: `${file}:${i + 1}`, line });
  });
  return out;
}

/** A port nothing listens on (the kernel's pick, released at once). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether a new server can bind `port` (nothing else holds it). */
async function canListen(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

describe('long-running commands', () => {
  const docs = [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];

  it('no document runs serve or sandbox in the background under npx', () => {
    const found = docs
      .flatMap(codeLines)
      .filter(({ line }) => LONG_RUNNING.test(line) && /&\s*(#.*)?$/.test(line));
    expect(found).toEqual([]);
  });

  it('docs/ start serve and sandbox with node, never npx', () => {
    const found = docs
      .filter((file) => file.startsWith('docs/'))
      .flatMap(codeLines)
      .filter(({ line }) => LONG_RUNNING.test(line));
    expect(found).toEqual([]);
  });

  describe('the background serve line of docs/serve.md, in a real shell', () => {
    let sandbox: RunningSandbox;
    let dir: string;
    beforeAll(async () => {
      sandbox = await startSandbox({ seed: 2, accounts: 1, businessesPerAccount: 1, port: 0 });
      dir = mkdtempSync(join(tmpdir(), 'ls-e2e-serve-'));
      writeFileSync(join(dir, 'creds.json'), JSON.stringify(sandbox.credentials));
      // A migrated embedded warehouse from the template: the child opens it, not builds it.
      await createPgliteDataDir(join(dir, 'pglite'));
    });
    afterAll(async () => {
      await sandbox?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('exits 0 on kill -TERM and frees its port', async () => {
      const documented = codeLines('docs/serve.md').find(
        ({ line }) => / serve &$/.test(line) && line.includes('PORT=8080'),
      );
      expect(documented, 'docs/serve.md: the background `serve &` line').toBeDefined();
      const port = await freePort();
      const line = documented!.line
        .replace('PORT=8080', `PORT=${port}`)
        .replaceAll('/tmp/creds.json', join(dir, 'creds.json'));
      // What a user's shell does with the line: start it in the background, then wait.
      const shell = spawn('/bin/sh', ['-c', `${line}\necho "started $!"\nwait $!`], {
        cwd: ROOT,
        env: {
          // `node` is this Node (24); a system node may be older than engines.node.
          PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? ''}`,
          PGLITE_DATA_DIR: join(dir, 'pglite'),
          LOG_LEVEL: 'info',
          ...cliCacheEnv(),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      shell.stderr.on('data', (chunk) => {
        stderr += chunk;
      });
      const exited = new Promise<number | null>((resolve) => shell.on('close', resolve));
      const early = exited.then((code) => {
        throw new Error(`the shell exited (${code}) before serve listened:\n${stderr}`);
      });
      const started = waitForStdout(shell, /started (\d+)/);
      const listening = waitForStdout(shell, /serve on (http:\/\/\S+):/);
      const pid = Number((await Promise.race([started, early]))[1]);
      const url = (await Promise.race([listening, early]))[1];
      expect(url).toBe(`http://127.0.0.1:${port}`);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect(await canListen(port)).toBe(false);

      process.kill(pid, 'SIGTERM');
      // `wait` hands back the server's own exit status: it ended, and cleanly.
      expect(await exited, stderr).toBe(0);
      expect(stderr).toContain('signal received: shutting down');
      expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
      expect(await canListen(port)).toBe(true);
    });
  });
});
