/**
 * `npm run test:busy`: the suite on a machine held busy, as a shared CI runner or a
 * developer's laptop in a build is. Four CPU-bound processes (BUSY_PROCESSES) spin beside
 * `vitest run` for as long as it runs, at the same priority; the arguments after `--` go
 * to vitest (`npm run test:busy -- --sequence.shuffle`, or one file). Exits with vitest's
 * exit code. docs/development.md, "The test suite", says what it is for.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const burners = Number(process.env['BUSY_PROCESSES'] ?? 4);
if (!Number.isInteger(burners) || burners < 0) {
  console.error(
    `BUSY_PROCESSES must be a whole number of processes, not "${process.env['BUSY_PROCESSES']}".`,
  );
  process.exit(2);
}

const spinning: ChildProcess[] = [];
for (let i = 0; i < burners; i++) {
  spinning.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
}
const stopBurners = () => {
  for (const burner of spinning) burner.kill('SIGKILL');
};
process.on('exit', stopBurners);
console.error(`test:busy: ${burners} CPU-bound processes spin beside the suite`);

const vitest = spawn(
  process.execPath,
  [join(import.meta.dirname, '../node_modules/vitest/vitest.mjs'), 'run', ...process.argv.slice(2)],
  { stdio: 'inherit' },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => vitest.kill(signal));
}
vitest.on('close', (code, signal) => {
  stopBurners();
  process.exit(code ?? (signal ? 1 : 0));
});
