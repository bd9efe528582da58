/**
 * Every fenced command line of README.md and docs/*.md, accounted for: each is walked
 * (run in-process through `main(argv, io)`, here or in test/meta/readme.test.ts),
 * or listed as skipped with the reason. The inventory is asserted whole, so a new line
 * cannot slip in unwalked and unlisted.
 *
 * Substitutions, kept few and explicit: `npx listings-sync` and `node_modules/.bin/node bin/listings-sync.mjs`
 * run `main(argv, io)` in this process, in the walk's directory and with only the line's
 * environment; the sandbox listens on a free port instead of 4010, and curl is pointed at
 * it. The lines of docs/writes.md that act on a configured account run against the
 * sandbox, with its credentials renamed as the docs name them (`agency-east`,
 * `agency-west`) in the file LISTINGS_CREDENTIALS_FILE names.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';
import {
  type CommandWarehouse,
  createCommandWarehouse,
  type Running,
  runCli,
} from '../helpers/cli.ts';
import { fences, parseCliLine } from '../helpers/doc-commands.ts';
import { endWalk, observedDays, walkSandboxTutorial } from './tutorial-walk.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];

interface DocLine {
  file: string;
  /** The fenced block's first line number in the file. */
  block: number;
  text: string;
}

/**
 * The command lines of `file`: every line of a ```sh/bash/shell block (continuations
 * joined, comments and blank lines left out), and the `$ ` lines of any other block.
 */
function commandLines(file: string): DocLine[] {
  const out: DocLine[] = [];
  for (const { lang, line: block, body: fenced } of fences(
    readFileSync(join(ROOT, file), 'utf8'),
  )) {
    const body = fenced.replace(/\\\n\s*/g, '');
    for (const raw of body.split('\n')) {
      const line = raw.trim();
      if (['sh', 'bash', 'shell'].includes(lang)) {
        if (line && !line.startsWith('#')) out.push({ file, block, text: line });
      } else if (line.startsWith('$ ')) {
        out.push({ file, block, text: line.slice(2) });
      }
    }
  }
  return out;
}

const README_WALK = 'walked: test/meta/readme.test.ts';
const WALKED = 'walked here';
const REAL_ACCOUNT = 'skipped: a real account and warehouse (values to fill in)';
const DOCKER = 'skipped: docker (the image: test/deploy renders what it deploys)';
const KUBECTL = 'skipped: kubectl against a cluster (test/deploy renders and validates k8s/)';
const PLACEHOLDER = 'skipped: ids to fill in (…), from a real review and request';
const BENCH = 'skipped: the benchmark, minutes of CPU (bench/ runs it)';
const FLOORS = 'skipped: the benchmark on scratch worktrees (bench/floors/), minutes of CPU each';
const SUITE = 'skipped: the test suite itself';
const LINEAGE =
  'skipped: a lineage receiver of your own (Marquez); test/lineage/ sends the same events to a local one';
const QUICK_START = 'walked: test/meta/readme.test.ts (npm start is the demo: test/demo)';
const SECRETS_ENV = 'skipped: the contents of overlays/prod/secrets.env (test/deploy reads them)';
const SERVE = 'skipped: a secret to fill in (…); test/serve/signal.e2e.test.ts runs serve';
const OWN_WAREHOUSE =
  'skipped: diagnoses your own warehouse and account (check and runs are walked in README.md)';
const JQ = 'skipped: jq over a log file of your own (the fields: src/log.ts, test/log/log.test.ts)';
const BACKUP = 'skipped: a real PostgreSQL server, or a stopped PGlite directory of your own';
const COPY =
  'skipped: a PostgreSQL server to copy into (test/warehouse/warehouse-copy.test.ts copies a synced PGlite warehouse and checks every row)';
const COMPOSE =
  'skipped: docker compose (test/deploy/compose.test.ts validates deploy/compose.yaml)';
const SYSTEMD = 'skipped: systemd on a host (test/deploy/systemd.test.ts verifies deploy/systemd/)';
const OWN_FILES = 'skipped: files of your own deployment (copied from deploy/*.example)';
const BACKGROUND =
  'skipped: job control (&, kill %1) in a real shell: test/cli/long-running-commands.e2e.test.ts';

/** Every command line of the docs, in order, and what becomes of it. */
const INVENTORY: [file: string, line: string, verdict: string][] = [
  [
    'README.md',
    'npm ci && npm start        # the whole product on this machine, nothing to configure',
    QUICK_START,
  ],
  [
    'README.md',
    "npx listings-sync report   # the report again, from the demo's warehouse (or yours, below)",
    README_WALK,
  ],
  [
    'README.md',
    'export DATABASE_URL=postgres://user:password@host:5432/warehouse   # unset: embedded PGlite in ./.data/pglite',
    REAL_ACCOUNT,
  ],
  [
    'README.md',
    'export LISTINGS_BASE_URL=https://listings.example.com               # everything before /api/v2',
    REAL_ACCOUNT,
  ],
  ['README.md', 'export LISTINGS_AUTH_TOKEN=…  LISTINGS_USER_EMAIL=you@example.com', REAL_ACCOUNT],
  ['README.md', 'npx listings-sync migrate', REAL_ACCOUNT],
  ['README.md', 'npx listings-sync sync', REAL_ACCOUNT],
  [
    'README.md',
    'npx listings-sync report --out report.html   # [--business ID] [--days 90]',
    REAL_ACCOUNT,
  ],
  [
    'README.md',
    'node_modules/.bin/node bin/listings-sync.mjs sandbox --seed 7 --port 4010 --credentials-out credentials.json',
    README_WALK,
  ],
  [
    'README.md',
    'LISTINGS_CREDENTIALS_FILE=credentials.json npx listings-sync migrate',
    README_WALK,
  ],
  [
    'README.md',
    'LISTINGS_CREDENTIALS_FILE=credentials.json npx listings-sync check     # credentials, warehouse',
    README_WALK,
  ],
  ['README.md', 'LISTINGS_CREDENTIALS_FILE=credentials.json npx listings-sync sync', README_WALK],
  [
    'README.md',
    "curl -X POST localhost:4010/__sandbox/clock/advance -H 'content-type: application/json' -d '{\"days\":1}'",
    README_WALK,
  ],
  [
    'README.md',
    "LISTINGS_CREDENTIALS_FILE=credentials.json npx listings-sync sync     # the sandbox's next day",
    README_WALK,
  ],
  ['README.md', 'npx listings-sync runs', README_WALK],
  [
    'docs/backup-restore.md',
    'pg_dump --format=custom --schema=public --file=listings-$(date +%F).dump "$DATABASE_URL"',
    BACKUP,
  ],
  [
    'docs/backup-restore.md',
    'pg_restore --dbname="$DATABASE_URL" --jobs=4 --no-owner listings-2026-11-24.dump',
    BACKUP,
  ],
  ['docs/backup-restore.md', 'npx listings-sync check', BACKUP],
  [
    'docs/backup-restore.md',
    'kill -TERM "$(cat .data/pglite/.listings-sync.pid)"   # serve, or whichever command holds it',
    BACKUP,
  ],
  ['docs/backup-restore.md', 'cp -a .data/pglite "backup/pglite-$(date +%F)"', BACKUP],
  [
    'docs/backup-restore.md',
    "export DATABASE_URL='postgres://listings:…@db.internal:5432/warehouse'",
    COPY,
  ],
  ['docs/backup-restore.md', 'npx listings-sync warehouse copy --from ./.data/pglite', COPY],
  ['docs/backup-restore.md', 'npx listings-sync warehouse copy --from ./.data/demo', COPY],
  [
    'docs/benchmarks.md',
    'npm run bench -- --small                # 1,000 businesses: the figures below (minutes on a busy machine)',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'npm run bench                           # also 10,000 businesses (peak RSS)',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'npm run bench -- --small --sync-only    # the sync alone (no loader, no raw zone), e.g. to try V8 flags:',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    "BENCH_NODE_FLAGS='--max-semi-space-size=8' npm run bench -- --small --sync-only",
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'BENCH_DATABASE_URL=postgres://… npm run bench   # default: postgres://postgres@127.0.0.1:5432/postgres',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    "npm run bench -- --against 8e49e40 --pairs 4   # this tree's sync against 8e49e40's, 4 rounds",
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'git worktree add /tmp/floor 20e4735 && ln -s "$PWD/node_modules" /tmp/floor/node_modules',
    FLOORS,
  ],
  [
    'docs/benchmarks.md',
    '(cd /tmp/floor && npm run bench -- --against 8e49e40 --pairs 3)   # the first row',
    FLOORS,
  ],
  [
    'docs/benchmarks.md',
    'for part in no-listing-review-derived-rows no-rank-rows no-raw-zone; do   # one row each',
    FLOORS,
  ],
  ['docs/benchmarks.md', 'git -C /tmp/floor apply "$PWD/bench/floors/$part.patch"', FLOORS],
  [
    'docs/benchmarks.md',
    '(cd /tmp/floor && npm run bench -- --against 8e49e40 --pairs 3)   # the last row: --pairs 4',
    FLOORS,
  ],
  ['docs/benchmarks.md', 'done', FLOORS],
  ['docs/benchmarks.md', 'git worktree remove --force /tmp/floor', FLOORS],
  [
    'docs/benchmarks.md',
    'npm run bench:memory                  # every command by every route, and the demo',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'npm run bench:memory -- --no-demo     # the commands only (minutes less)',
    BENCH,
  ],
  ['docs/benchmarks.md', 'npm run bench:figures                 # 3 runs', BENCH],
  ['docs/benchmarks.md', 'npm run bench:figures -- --runs 5', BENCH],
  ['docs/benchmarks.md', 'npm run bench:answer-shape', BENCH],
  [
    'docs/benchmarks.md',
    'BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:raw -- --businesses 50 --nights 31 --no-scale',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:raw -- --scale-only',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:replay -- --businesses 50 --nights 10',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/raw-prune.ts',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'npm run bench:warehouse -- --businesses 200 --days 365    # the figures below',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'npm run bench:warehouse                                   # 1,000 businesses, 365 nights',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'BENCH_DATABASE_URL=postgres://… npm run bench:warehouse   # default: postgres://postgres@127.0.0.1:5432/postgres',
    BENCH,
  ],
  [
    'docs/benchmarks.md',
    'BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench:warehouse -- --businesses 50 --days 365',
    BENCH,
  ],
  ['docs/deploy.md', 'docker build -t registry.example.com/listings-sync:0.1.0 .', DOCKER],
  ['docs/deploy.md', 'docker push registry.example.com/listings-sync:0.1.0', DOCKER],
  [
    'docs/deploy.md',
    'docker buildx imagetools inspect node:24-slim     # Digest: sha256:…',
    DOCKER,
  ],
  [
    'docs/deploy.md',
    'docker build --build-arg NODE_IMAGE=node:24-slim@sha256:<digest> -t registry.example.com/listings-sync:0.1.0 .',
    DOCKER,
  ],
  ['docs/deploy.md', 'DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/listings', SECRETS_ENV],
  ['docs/deploy.md', 'WEBHOOK_SECRET=REPLACE_ME', SECRETS_ENV],
  ['docs/deploy.md', 'ALERT_WEBHOOK_URL=https://alerts.example.com/listings', SECRETS_ENV],
  ['docs/deploy.md', 'ALERT_WEBHOOK_SECRET=REPLACE_ME', SECRETS_ENV],
  [
    'docs/deploy.md',
    'ALERT_SLACK_WEBHOOK_URL=https://hooks.slack.com/services/REPLACE_ME',
    SECRETS_ENV,
  ],
  ['docs/deploy.md', 'kubectl apply -k overlays/prod', KUBECTL],
  ['docs/deploy.md', 'kubectl -n listings get pods -w', KUBECTL],
  [
    'docs/deploy.md',
    'kubectl -n listings create job --from=cronjob/listings-sync-nightly listings-sync-now',
    KUBECTL,
  ],
  ['docs/deploy.md', 'kubectl -n listings logs -f job/listings-sync-now -c sync', KUBECTL],
  ['docs/deploy.md', 'kubectl apply -k overlays/prod', KUBECTL],
  ['docs/deploy.md', 'kubectl -n listings rollout status deployment/listings-sync-serve', KUBECTL],
  [
    'docs/deploy.md',
    'docker run --rm --env-file listings-sync.env registry.example.com/listings-sync:0.1.0 migrate',
    DOCKER,
  ],
  [
    'docs/deploy.md',
    "docker run -d --name listings-sync --restart unless-stopped --env-file listings-sync.env -e SYNC_SCHEDULE='0 3 * * *' -p 8080:8080 -p 127.0.0.1:9464:9464 --read-only --tmpfs /tmp --cap-drop ALL --security-opt no-new-privileges --stop-timeout 90 registry.example.com/listings-sync:0.1.0 serve",
    DOCKER,
  ],
  ['docs/deploy.md', 'cp deploy/listings-sync.env.example deploy/listings-sync.env', OWN_FILES],
  ['docs/deploy.md', 'cp deploy/postgres.env.example deploy/postgres.env', OWN_FILES],
  ['docs/deploy.md', 'chmod 600 deploy/listings-sync.env deploy/postgres.env', OWN_FILES],
  ['docs/deploy.md', 'docker compose -f deploy/compose.yaml up -d --build', COMPOSE],
  ['docs/deploy.md', 'docker compose -f deploy/compose.yaml logs -f serve', COMPOSE],
  ['docs/deploy.md', 'install -d -m 0755 /etc/listings-sync', SYSTEMD],
  [
    'docs/deploy.md',
    'install -m 0600 deploy/listings-sync.env.example /etc/listings-sync/listings-sync.env',
    SYSTEMD,
  ],
  [
    'docs/deploy.md',
    'install -m 0644 deploy/systemd/listings-sync-serve.service /etc/systemd/system/',
    SYSTEMD,
  ],
  ['docs/deploy.md', 'systemctl daemon-reload', SYSTEMD],
  ['docs/deploy.md', 'systemctl enable --now listings-sync-serve', SYSTEMD],
  ['docs/deploy.md', 'journalctl -u listings-sync-serve -f', SYSTEMD],
  [
    'docs/deploy.md',
    'install -m 0644 deploy/systemd/listings-sync-sync.service deploy/systemd/listings-sync-sync.timer /etc/systemd/system/',
    SYSTEMD,
  ],
  ['docs/deploy.md', 'systemctl daemon-reload', SYSTEMD],
  ['docs/deploy.md', 'systemctl enable --now listings-sync-sync.timer', SYSTEMD],
  [
    'docs/development.md',
    'npm test                      # everything, on PGlite (and PostgreSQL when TEST_DATABASE_URL is set)',
    SUITE,
  ],
  [
    'docs/development.md',
    'npm run test:unit             # the unit project: no database, sandbox or child process, seconds',
    SUITE,
  ],
  [
    'docs/development.md',
    'npm run test:integration      # all but the unit project and *.e2e.test.ts: commands run in-process',
    SUITE,
  ],
  [
    'docs/development.md',
    'npm run test:e2e              # the *.e2e.test.ts files: real processes (signals, kill -9, exit codes)',
    SUITE,
  ],
  [
    'docs/development.md',
    'npm run test:busy -- --sequence.shuffle   # the suite beside four CPU-bound processes, in any order',
    SUITE,
  ],
  [
    'docs/development.md',
    'npx vitest run test/sync/sync.test.ts -t "writes no row"   # one test alone',
    SUITE,
  ],
  [
    'docs/development.md',
    'npx vitest run --sequence.shuffle                           # any order',
    SUITE,
  ],
  [
    'docs/development.md',
    'for f in $(git ls-files \'test/*.test.ts\'); do npx vitest run "$f" > /dev/null || echo "FAILED $f"; done   # each file alone',
    SUITE,
  ],
  [
    'docs/development.md',
    'TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm test   # both backends',
    SUITE,
  ],
  ['docs/lineage.md', 'OPENLINEAGE_URL=http://localhost:5000 npm start', LINEAGE],
  [
    'docs/lineage.md',
    'OPENLINEAGE_URL=http://localhost:5000 OPENLINEAGE_NAMESPACE=nightly npx listings-sync sync',
    LINEAGE,
  ],
  [
    'docs/running.md',
    'jq -c \'select(.level == "warn" or .level == "error") | {time, msg, credential, businessId, stream, err: .err.message}\' sync.log',
    JQ,
  ],
  [
    'docs/running.md',
    'jq -r \'select(.msg | startswith("stream failed")) | [.credential, .businessId, .stream, .err.code] | @tsv\' sync.log',
    JQ,
  ],
  [
    'docs/running.md',
    'jq -c \'select(.runId == "3c583c7d-7d75-4be7-b162-aed11706cc11")\' sync.log',
    JQ,
  ],
  ['docs/running.md', 'jq \'select(.msg == "sync finished")\' sync.log', JQ],
  [
    'docs/running.md',
    'jq -r \'select(.msg == "retrying upstream read") | "\\(.credential) \\(.status)"\' sync.log | sort | uniq -c',
    JQ,
  ],
  [
    'docs/running.md',
    'node_modules/.bin/node bin/listings-sync.mjs sandbox --seed 7 --port 4010 --credentials-out credentials.json',
    WALKED,
  ],
  [
    'docs/running.md',
    'LISTINGS_CREDENTIALS_FILE=credentials.json npx listings-sync migrate',
    WALKED,
  ],
  ['docs/running.md', 'LISTINGS_CREDENTIALS_FILE=credentials.json npx listings-sync sync', WALKED],
  [
    'docs/running.md',
    "curl -X POST localhost:4010/__sandbox/clock/advance -H 'content-type: application/json' -d '{\"days\":1}'",
    WALKED,
  ],
  [
    'docs/running.md',
    'LISTINGS_CREDENTIALS_FILE=credentials.json npx listings-sync sync   # history and alerts',
    WALKED,
  ],
  [
    'docs/serve.md',
    'npx listings-sync migrate                  # once per release (a k8s Job or init container)',
    SERVE,
  ],
  [
    'docs/serve.md',
    'WEBHOOK_SECRET=… LISTINGS_CREDENTIALS_FILE=credentials.json node_modules/.bin/node bin/listings-sync.mjs serve',
    SERVE,
  ],
  [
    'docs/serve.md',
    'node_modules/.bin/node bin/listings-sync.mjs sandbox --port 4010 --credentials-out /tmp/creds.json &',
    BACKGROUND,
  ],
  [
    'docs/serve.md',
    'WEBHOOK_SECRET=s1 LISTINGS_CREDENTIALS_FILE=/tmp/creds.json PORT=8080 node_modules/.bin/node bin/listings-sync.mjs serve &',
    BACKGROUND,
  ],
  [
    'docs/serve.md',
    'curl -s -X POST -H \'content-type: application/json\' -d \'{"url":"http://127.0.0.1:8080/webhooks","secret":"s1","count":3}\' http://127.0.0.1:4010/__sandbox/webhooks/emit',
    BACKGROUND,
  ],
  ['docs/serve.md', 'curl -s http://127.0.0.1:8080/readyz', BACKGROUND],
  ['docs/serve.md', 'curl -s http://127.0.0.1:9464/metrics | grep listings_sync_', BACKGROUND],
  [
    'docs/serve.md',
    'kill -TERM %2 %1   # serve, then the sandbox: each closes its port and exits 0',
    BACKGROUND,
  ],
  ['docs/troubleshooting.md', 'npx listings-sync runs --limit 3', OWN_WAREHOUSE],
  ['docs/troubleshooting.md', 'npx listings-sync check', OWN_WAREHOUSE],
  ['docs/writes.md', 'npx listings-sync api businesses get 99 --account agency-east', WALKED],
  [
    'docs/writes.md',
    'npx listings-sync keywords apply --file keywords.json --account agency-east --dry-run   # the plan only',
    WALKED,
  ],
  [
    'docs/writes.md',
    'npx listings-sync keywords apply --file keywords.json --account agency-east',
    WALKED,
  ],
  [
    'docs/writes.md',
    'npx listings-sync api reviews respond 10000003 9b2c…-uuid --content "Thank you, Ana!" --account agency-east',
    PLACEHOLDER,
  ],
  [
    'docs/writes.md',
    'echo \'{"content": "Thank you!"}\' | npx listings-sync api reviews respond 10000003 9b2c… --file - --account agency-east',
    PLACEHOLDER,
  ],
  [
    'docs/writes.md',
    'npx listings-sync api reviews response-status 1042 --account agency-east   # status now, and its history',
    PLACEHOLDER,
  ],
];

describe('the command lines of README.md and docs/', () => {
  it('are each walked or skipped for a stated reason, and the list is complete', () => {
    const found = DOCS.flatMap(commandLines).map((l) => `${l.file}: ${l.text}`);
    expect(found).toEqual(INVENTORY.map(([file, line]) => `${file}: ${line}`));
  });

  it('name the credential wherever a command acts on one account (the sandbox writes two)', () => {
    const oneAccount = DOCS.flatMap(commandLines).filter((l) =>
      /listings-sync (api|keywords) /.test(l.text),
    );
    expect(oneAccount.length).toBeGreaterThan(0);
    for (const line of oneAccount) expect(line.text, line.file).toMatch(/--account \S/);
  });

  it('start no long-running command under npx (it does not pass SIGTERM on)', () => {
    for (const line of DOCS.flatMap(commandLines)) {
      expect(line.text).not.toMatch(/npx listings-sync (serve|sandbox)\b/);
    }
  });
});

/** The walked lines of `file`, as written, in order. */
function walkedLines(file: string): string[] {
  return INVENTORY.filter(([f, , verdict]) => f === file && verdict === WALKED).map(
    ([, line]) => line,
  );
}

/** A line of the sandbox tutorial: the sandbox, migrate, sync, or the curl between. */
function inTutorial(line: string): boolean {
  const command = parseCliLine(line)?.args[0] ?? '';
  return line.startsWith('curl ') || ['sandbox', 'migrate', 'sync'].includes(command);
}

describe('docs/writes.md: the lines that act on a configured account', () => {
  let dir: string;
  let sandbox: RunningSandbox;
  let env: Record<string, string>;
  let warehouse: CommandWarehouse | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'docs-walk-account-'));
    sandbox = await startSandbox({ seed: 7, accounts: 2, businessesPerAccount: 3, port: 0 });
    const names = ['agency-east', 'agency-west'];
    const credentials = sandbox.credentials.map((c, i) => ({ ...c, name: names[i] }));
    await writeFile(join(dir, 'credentials.json'), JSON.stringify(credentials));
    // The file the section shows, as written.
    const doc = readFileSync(join(ROOT, 'docs/writes.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Keywords as code'));
    const json = /```json\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
    await writeFile(join(dir, 'keywords.json'), json);
    env = { LISTINGS_CREDENTIALS_FILE: 'credentials.json' };
    // The commands' warehouse, the default ./.data/pglite of `dir`, is one the test holds.
    warehouse = await createCommandWarehouse('pglite', { dataDir: join(dir, '.data/pglite') });
    expect((await runCli(['migrate'], env, { cwd: dir })).code).toBe(0);
  });
  afterAll(async () => {
    await sandbox?.close();
    await warehouse?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('each runs as written: the error shown is the one printed, the keywords plan then apply', async () => {
    const lines = walkedLines('docs/writes.md').filter((l) => !inTutorial(l));
    expect(lines).toHaveLength(3);
    const doc = readFileSync(join(ROOT, 'docs/writes.md'), 'utf8');
    const results: { line: string; code: number | null; out: string }[] = [];
    for (const line of lines) {
      const parsed = parseCliLine(line);
      expect(parsed, line).not.toBeNull();
      const run = await runCli(parsed?.args ?? [], { ...env, ...parsed?.env }, { cwd: dir });
      results.push({ line, code: run.code, out: run.stdout + run.stderr });
    }
    // `api businesses get 99`: what the docs show under it, exit 1.
    const shown = doc.split(`$ ${lines[0]}\n`)[1]?.split('\n')[0];
    expect(results[0]?.code).toBe(1);
    expect(results[0]?.out.trim()).toBe(shown);
    // The dry run plans, the apply applies: exit 0, and neither asks for --account.
    for (const result of results.slice(1)) {
      expect({ line: result.line, code: result.code }).toEqual({ line: result.line, code: 0 });
      expect(result.out).not.toContain('--account NAME');
    }
    expect(results[1]?.out).toMatch(/\+ plumber austin/);
    const again = await runCli(parseCliLine(lines[1] ?? '')?.args ?? [], env, { cwd: dir });
    expect(again.code).toBe(0);
    expect(again.stdout).not.toMatch(/\+ plumber austin/);
  });
});

describe('docs/running.md: the sandbox tutorial, line by line', () => {
  let dir: string;
  let sandbox: Running | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'docs-walk-sandbox-'));
  });
  afterAll(async () => {
    sandbox?.stop('SIGTERM');
    await sandbox?.done;
    await endWalk(dir);
    await rm(dir, { recursive: true, force: true });
  });

  it('every line exits 0, and the sync after clock/advance records the next day', async () => {
    const lines = walkedLines('docs/running.md').filter((l) => inTutorial(l));
    const ran = await walkSandboxTutorial(lines, dir, (started) => {
      sandbox = started;
    });
    expect(ran).toEqual(['sandbox', 'migrate', 'sync', 'curl', 'sync']);
    expect(await observedDays(dir)).toEqual(['2026-01-01', '2026-01-02']);
  });
});
