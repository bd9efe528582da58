/**
 * The image's compile cache (docs/deploy.md, "The image"): each stage of the Dockerfile
 * runs src/cli/warm-compile-cache.ts at build time, and its entrypoint then reads the
 * modules compiled. Node keeps a cache per V8 flags, so a warm run with other flags than
 * the entrypoint's would leave a cache the image never reads (both re-execute themselves
 * with the process entry's flags, bin/listings-sync.mjs): here each stage's two
 * command lines, as the Dockerfile writes them, run for real, and Node's own trace
 * (`NODE_DEBUG_NATIVE=COMPILE_CACHE`) says whether the entrypoint's modules were taken
 * from the cache.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

interface Stage {
  name: string;
  /** The warm step's node arguments (`RUN node …`) run with the entrypoint's flags. */
  warm: string[] | undefined;
  /** The entrypoint's node arguments (`ENTRYPOINT ["node", …]`). */
  entrypoint: string[];
}

/** The node flags of an argument list: what Node keys a compile cache by. */
const flagsOf = (args: readonly string[]) => args.filter((a) => a.startsWith('--')).join(' ');

/** The Dockerfile's instructions, continuation lines joined, comments out. */
async function instructions(): Promise<string[]> {
  return (await readFile('Dockerfile', 'utf8'))
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
}

/** Each stage's entrypoint and the warm step (built before it) that has its flags. */
async function stages(): Promise<Stage[]> {
  const warms: string[][] = [];
  const found: Stage[] = [];
  let name = '';
  for (const line of await instructions()) {
    name = /^FROM \S+ AS (\w+)$/.exec(line)?.[1] ?? name;
    const warm = /^RUN node (.*src\/cli\/warm-compile-cache\.ts)$/.exec(line);
    if (warm) warms.push((warm[1] as string).split(/\s+/));
    if (line.startsWith('ENTRYPOINT ')) {
      const entrypoint = (JSON.parse(line.slice('ENTRYPOINT '.length)) as string[]).slice(1);
      const matching = warms.find((w) => flagsOf(w) === flagsOf(entrypoint));
      found.push({ name, warm: matching, entrypoint });
    }
  }
  return found;
}

/** Runs node with `args` and the cache in `dir`; the exit code and both streams. */
async function node(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, args, {
      env: { PATH: process.env['PATH'] ?? '', ...env },
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe("the image's compile cache", () => {
  it('is warmed in each stage with the flags its entrypoint runs with, and read by it', async () => {
    const found = await stages();
    expect(found.map((s) => s.name)).toEqual(['runtime', 'airbyte']);
    // The flags live in the entry alone (docs/sizing.md, "The V8 flags"): no NODE_OPTIONS.
    expect(await readFile('Dockerfile', 'utf8')).not.toMatch(/^ENV NODE_OPTIONS/m);
    for (const stage of found) {
      expect(stage.warm, `no warm step with ${stage.name}'s flags`).toBeDefined();
      const dir = await mkdtemp(join(tmpdir(), 'ls-compile-cache-'));
      try {
        const env = { NODE_COMPILE_CACHE: dir };
        const warmed = await node(stage.warm ?? [], env);
        expect(warmed.stderr, stage.name).toBe('');
        expect(warmed.code, stage.name).toBe(0);
        expect(warmed.stdout).toMatch(/^compiled \d+ modules into .+\n$/);
        expect(Number(/compiled (\d+)/.exec(warmed.stdout)?.[1])).toBeGreaterThan(200);

        const started = await node([...stage.entrypoint, '--version'], {
          ...env,
          NODE_DEBUG_NATIVE: 'COMPILE_CACHE',
        });
        expect(started.code, started.stderr.slice(-2000)).toBe(0);
        expect(started.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
        // The entry, and the program it loads (src/cli/program.ts).
        for (const file of ['main', 'program']) {
          expect(started.stderr).toMatch(
            new RegExp(`V8 code cache for ESM file://\\S+/src/cli/${file}\\.ts was accepted`),
          );
        }
        const rejected = started.stderr
          .split('\n')
          .filter((l) => /src\/\S+ was rejected|mismatch/.test(l));
        expect(rejected).toEqual([]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }
  });

  it('is left read-only to the runtime user once warmed, as the code is', async () => {
    const lines = await instructions();
    const lastWarm = lines.findLastIndex((l) => /warm-compile-cache\.ts$/.test(l));
    const after = lines.slice(lastWarm + 1);
    const handBack = after.findIndex((l) =>
      /^RUN chown -R root:root \/app\/\.cache && chmod -R a-w \/app\/\.cache$/.test(l),
    );
    expect(handBack).toBeGreaterThan(-1);
    expect(after.slice(0, handBack).filter((l) => l.startsWith('USER '))).toEqual(['USER root']);
    expect(after.slice(handBack).find((l) => l.startsWith('USER '))).toBe('USER 1000:1000');
  });

  it('another flag is another cache: the warm step must use the entrypoint’s', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ls-compile-cache-'));
    try {
      const env = { NODE_COMPILE_CACHE: dir };
      // A choice made on the command line wins over the entry's (bin/listings-sync.mjs).
      const warmed = await node(['--no-liftoff-only', 'src/cli/warm-compile-cache.ts'], env);
      expect(warmed.code, warmed.stderr).toBe(0);
      const started = await node(['bin/listings-sync.mjs', '--version'], {
        ...env,
        NODE_DEBUG_NATIVE: 'COMPILE_CACHE',
      });
      expect(started.code).toBe(0);
      expect(started.stderr).not.toMatch(/src\/cli\/main\.ts was accepted/);
      expect(await readdir(dir)).toHaveLength(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('says what is wrong when NODE_COMPILE_CACHE is not set, and exits 1', async () => {
    const ran = await node(['src/cli/warm-compile-cache.ts'], {});
    expect(ran.code).toBe(1);
    expect(ran.stdout).toBe('');
    expect(ran.stderr).toContain('NODE_COMPILE_CACHE is not set');
    expect(ran.stderr).toContain('docs/deploy.md, "The image"');
  });
});
