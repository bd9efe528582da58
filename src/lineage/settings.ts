/**
 * Whether and where run events go (docs/lineage.md, "Settings"): the OpenLineage clients'
 * own variables, read by the rules of the settings table (src/config/settings.ts). Off
 * unless OPENLINEAGE_URL or the file transport is set, and off whatever is set with
 * OPENLINEAGE_DISABLED=true. Imports only the configuration: the process entry reads it
 * before any command, and nothing else of lineage loads until a run has an event to send.
 */
import { ConfigError } from '../config/index.ts';
import { type ConfigVariable, setting } from '../config/settings.ts';

export type LineageTransport =
  | { type: 'http'; url: string; endpoint: string; apiKey?: string }
  | { type: 'file'; path: string };

/** `OPENLINEAGE_PARENT_ID`, split: the orchestrator's job and run. */
export interface ParentRun {
  namespace: string;
  name: string;
  runId: string;
}

export interface LineageSettings {
  transport: LineageTransport;
  /** The namespace of the jobs (OPENLINEAGE_NAMESPACE). */
  namespace: string;
  /** The bound of one emit, in milliseconds (OPENLINEAGE__TRANSPORT__TIMEOUT). */
  timeoutMs: number;
  parent?: ParentRun;
  /**
   * Where the warehouse's tables live, for their dataset names: `postgres://host:port` of
   * DATABASE_URL (its host and port only, never its user or password), or PGlite's.
   */
  warehouseNamespace: string;
  /** The package's version, in each event's `producer`. */
  version: string;
}

function read<T>(env: Readonly<Record<string, string | undefined>>, name: ConfigVariable): T {
  const parsed = setting(name).rule(name).safeParse(env[name]);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => issue.message).join('; '));
  }
  return parsed.data as T;
}

/**
 * The lineage settings of `env`, or undefined when no event is to be sent. Throws a
 * ConfigError naming the variable when one is set wrong.
 */
export function lineageSettings(
  env: Readonly<Record<string, string | undefined>>,
  version: string,
): LineageSettings | undefined {
  const disabled = read<string>(env, 'OPENLINEAGE_DISABLED') === 'true';
  const type = read<string>(env, 'OPENLINEAGE__TRANSPORT__TYPE');
  const url = read<string | undefined>(env, 'OPENLINEAGE_URL');
  const path = read<string | undefined>(env, 'OPENLINEAGE__TRANSPORT__LOG_FILE_PATH');
  const timeoutMs = read<number>(env, 'OPENLINEAGE__TRANSPORT__TIMEOUT');
  const parentId = read<string | undefined>(env, 'OPENLINEAGE_PARENT_ID');
  if (disabled) return undefined;
  let transport: LineageTransport;
  if (type === 'file') {
    if (!path) {
      throw new ConfigError(
        'OPENLINEAGE__TRANSPORT__TYPE=file needs OPENLINEAGE__TRANSPORT__LOG_FILE_PATH, the file the events are appended to',
      );
    }
    transport = { type: 'file', path };
  } else {
    if (!url) return undefined;
    const apiKey = read<string | undefined>(env, 'OPENLINEAGE_API_KEY');
    transport = {
      type: 'http',
      url,
      endpoint: read<string>(env, 'OPENLINEAGE_ENDPOINT'),
      ...(apiKey ? { apiKey } : {}),
    };
  }
  return {
    transport,
    namespace: read<string>(env, 'OPENLINEAGE_NAMESPACE'),
    timeoutMs,
    ...(parentId ? { parent: parentRun(parentId) } : {}),
    warehouseNamespace: warehouseNamespace(env.DATABASE_URL),
    version,
  };
}

/** `namespace/name/run_id`: the first segment, the last, and what lies between. */
export function parentRun(id: string): ParentRun {
  const first = id.indexOf('/');
  const last = id.lastIndexOf('/');
  return {
    namespace: id.slice(0, first),
    name: id.slice(first + 1, last),
    runId: id.slice(last + 1).toLowerCase(),
  };
}

/**
 * The spec's PostgreSQL namespace, `postgres://{host}:{port}` (OpenLineage's Naming.md),
 * from DATABASE_URL's host and port (5432 when it names none); `pglite://embedded` for the
 * embedded database, which no other process can reach.
 */
export function warehouseNamespace(databaseUrl: string | undefined): string {
  const text = databaseUrl?.trim();
  if (!text) return 'pglite://embedded';
  const url = URL.parse(text);
  if (!url?.hostname) return 'postgres://localhost:5432';
  return `postgres://${url.hostname}:${url.port || '5432'}`;
}

/** What `--help` of the commands that send events says (sync, replay, airbyte read). */
export const LINEAGE_HELP =
  '\nLineage: with OPENLINEAGE_URL set (Marquez: OPENLINEAGE_URL=http://localhost:5000) the\n' +
  'run sends OpenLineage START and COMPLETE/FAIL/ABORT events: its upstream reads, the\n' +
  'tables it wrote, the views (docs/lineage.md). Off by default; never changes the exit code.\n';
