#!/usr/bin/env node
/**
 * The process entry of every route that starts listings-sync (`npx listings-sync`, npm
 * scripts, `node bin/listings-sync.mjs`, `node_modules/.bin/node bin/listings-sync.mjs`, the
 * image's entrypoint, the systemd units; docs/running.md, "One runtime"). Plain JavaScript
 * that parses on any Node, so that it can say what is wrong before anything TypeScript loads:
 *
 * 1. On a Node older than package.json's `engines.node`, one line names the version needed
 *    and the command that brings it, and the process exits 1 (no stack trace).
 * 2. The V8 flags below, the only place they are written, are in effect: any one missing
 *    from the command line and NODE_OPTIONS (by name: a value given there wins, so a
 *    deployment can set `NODE_OPTIONS=--max-old-space-size=512`) makes the process
 *    re-execute itself with them, in place (`process.execve`: the same pid, standard
 *    streams, signals and exit code; a child process, its signals forwarded, where Node has
 *    no execve). The heap caps cannot be changed once the heap exists, so a re-exec it is,
 *    once per start (docs/sizing.md, "The V8 flags": about 30 ms and no extra peak RSS).
 * 3. Then the program (src/cli/main.ts).
 */
import { spawn } from 'node:child_process';
import { readFileSync, realpathSync, rmdirSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * The V8 flags every listings-sync process runs with (docs/sizing.md; docs/benchmarks.md,
 * "Heap flags"): the young generation at 8 MB and the old one at 256 MB (the sync's live
 * heap is about 30 MB but it allocates fast), fewer full collections for the same bound,
 * and the embedded PGlite's WebAssembly on V8's baseline compiler only (the optimising
 * tier's compilations of PostgreSQL's largest functions cost hundreds of MB).
 */
export const NODE_FLAGS = [
  '--max-semi-space-size=8',
  '--max-old-space-size=256',
  '--heap-growing-percent=50',
  '--liftoff-only',
];

/**
 * A flag's name as V8 reads it: `--max_old_space_size=1` and `--max-old-space-size` alike,
 * `--no-liftoff-only` and `--liftoff-only` alike (either is a choice made).
 */
function flagName(flag) {
  return flag
    .split('=')[0]
    .replace(/_/g, '-')
    .replace(/^--no-/, '--');
}

/** The flags of NODE_FLAGS that neither `execArgv` nor `nodeOptions` sets (by name). */
export function missingFlags(execArgv, nodeOptions) {
  const given = new Set(
    [...execArgv, ...(nodeOptions || '').split(/\s+/)].filter(Boolean).map(flagName),
  );
  return NODE_FLAGS.filter((flag) => !given.has(flagName(flag)));
}

/** `[major, minor, patch]` of `v24.1.0` or `22.18`. */
function versionParts(text) {
  const parts = String(text).replace(/^v/, '').split('.').map(Number);
  return [parts[0] || 0, parts[1] || 0, parts[2] || 0];
}

/**
 * The line to print when `version` is older than the `>=X.Y[.Z]` of `engines`, else
 * undefined (also for a range of another form, which this does not judge).
 */
export function tooOldLine(version, engines) {
  const floor = /^>=\s*v?(\d+(?:\.\d+){0,2})$/.exec(String(engines || '').trim());
  if (!floor) return undefined;
  const have = versionParts(version);
  const need = versionParts(floor[1]);
  for (let i = 0; i < 3; i++) {
    if (have[i] > need[i]) return undefined;
    if (have[i] < need[i]) {
      return (
        `listings-sync needs Node ${floor[1]} or later (package.json's engines); this is Node ` +
        `${version}. Run \`npm ci\` (it installs the project's Node 24), then \`npx listings-sync\`.`
      );
    }
  }
  return undefined;
}

/** package.json's `engines.node`, or undefined where it cannot be read. */
function enginesNode() {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    return pkg.engines?.node;
  } catch {
    return undefined;
  }
}

/** Exits 1 with the one line when this Node is older than package.json allows. */
export function refuseOldNode() {
  const line = tooOldLine(process.version, enginesNode());
  if (line === undefined) return;
  process.stderr.write(`${line}\n`);
  process.exit(1);
}

/**
 * Runs `script` with `args` again in this process with the missing flags added, when any
 * is missing; returns only when none is (the caller then loads the program). Without
 * `process.execve` (Windows), a child inherits the standard streams; SIGTERM, SIGINT and
 * SIGHUP are passed on to it, and its exit code or signal becomes this process's.
 */
export function ensureNodeFlags(script, args) {
  const missing = missingFlags(process.execArgv, process.env.NODE_OPTIONS);
  if (missing.length === 0) return;
  const argv = [...process.execArgv, ...missing, script, ...args];
  // With NODE_COMPILE_CACHE set, Node made a cache directory for this process's flags as it
  // started; nothing runs under them but this file: an empty one is removed (rmdir leaves a
  // directory that holds anything).
  try {
    const cache = nodeModule.getCompileCacheDir?.();
    if (cache) rmdirSync(cache);
  } catch {}
  if (typeof process.execve === 'function') {
    process.execve(process.execPath, [process.execPath, ...argv], process.env);
  }
  const child = spawn(process.execPath, argv, { stdio: 'inherit' });
  const signals = ['SIGTERM', 'SIGINT', 'SIGHUP'];
  const forward = (signal) => child.kill(signal);
  for (const signal of signals) process.on(signal, forward);
  child.once('exit', (code, signal) => {
    for (const name of signals) process.off(name, forward);
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
  // Never resolves: the child's exit ends this process.
  return new Promise(() => {});
}

function startedAsMain() {
  if (import.meta.main !== undefined) return import.meta.main;
  try {
    return realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (startedAsMain()) {
  refuseOldNode();
  await ensureNodeFlags(fileURLToPath(import.meta.url), process.argv.slice(2));
  const { start } = await import('../src/cli/main.ts');
  await start();
}
