/**
 * OpenLineage events (docs/lineage.md, "Events"), built from what a run already knows: its
 * id, its job, the credentials and operations it read, the tables it wrote and their
 * counts, its outcome. Pure: no I/O, no clock but the `eventTime` handed in. The names are
 * the spec's (OpenLineage.json 2-0-2 and the facets under spec/facets/): a RunEvent per
 * transition (START, then COMPLETE, FAIL or ABORT), a JobEvent per documented view (static
 * lineage: the view's job reads its tables and writes the view), each facet with its
 * `_producer` and `_schemaURL`.
 */
import {
  type CredentialRef,
  type DatasetId,
  plannedOperations,
  tableDataset,
  tableFields,
  upstreamDatasets,
  type WarehouseLocation,
} from './datasets.ts';
import type { ParentRun } from './settings.ts';
import { VIEW_TABLES } from './views.ts';

const SPEC = 'https://openlineage.io/spec/2-0-2/OpenLineage.json';
const FACETS = 'https://openlineage.io/spec/facets';
export const RUN_EVENT_SCHEMA = `${SPEC}#/$defs/RunEvent`;
export const JOB_EVENT_SCHEMA = `${SPEC}#/$defs/JobEvent`;
export const FACET_SCHEMAS = {
  jobType: `${FACETS}/2-0-4/JobTypeJobFacet.json#/$defs/JobTypeJobFacet`,
  tags: `${FACETS}/2-0-3/TagsJobFacet.json#/$defs/TagsJobFacet`,
  schema: `${FACETS}/1-0-0/SchemaDatasetFacet.json#/$defs/SchemaDatasetFacet`,
  outputStatistics: `${FACETS}/1-0-1/OutputStatisticsOutputDatasetFacet.json#/$defs/OutputStatisticsOutputDatasetFacet`,
  errorMessage: `${FACETS}/1-0-0/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet`,
  parent: `${FACETS}/1-0-1/ParentRunFacet.json#/$defs/ParentRunFacet`,
} as const;

/** The integration every job names in its job type facet. */
export const INTEGRATION = 'listings-sync';

export type EventType = 'START' | 'COMPLETE' | 'FAIL' | 'ABORT';
export type RunOutcome = 'succeeded' | 'partial' | 'failed' | 'interrupted';

/** A run's status as the event type that ends it: partial is COMPLETE (its counts say more). */
export function endEventType(status: RunOutcome): EventType {
  if (status === 'failed') return 'FAIL';
  if (status === 'interrupted') return 'ABORT';
  return 'COMPLETE';
}

/** What a run's events say of it, known when it starts. */
export interface LineageRunInfo {
  runId: string;
  /** The command: `sync`, `replay`, `demo`, `airbyte.read`. */
  command: string;
  /** `I/N` of a shard run. */
  shard?: string | undefined;
  credentials: readonly CredentialRef[];
  /** The streams the run reads. */
  streams: readonly string[];
  /** The operations the run's streams read (START's inputs); by default from `streams`. */
  operations?: readonly string[];
}

/** What a run's last event says: its outcome, what it read and wrote. */
export interface LineageRunEnd {
  status: RunOutcome;
  /** Table → rows written (inserted, updated, deleted; unchanged rows are not written). */
  rowsWritten: Readonly<Record<string, number>>;
  /** The operations the run called (COMPLETE's inputs). */
  operations: readonly string[];
  /** Redacted text of what failed (sync_runs.error). */
  error?: string;
}

export interface EventContext {
  producer: string;
  namespace: string;
  parent?: ParentRun;
  /** Where the tables are; undefined for a run that writes no warehouse (airbyte read). */
  warehouse?: WarehouseLocation;
}

export type Facet = Record<string, unknown> & { _producer: string; _schemaURL: string };

export interface DatasetJson extends DatasetId {
  facets?: Record<string, Facet>;
  outputFacets?: Record<string, Facet>;
}

export interface RunEventJson {
  eventType: EventType;
  eventTime: string;
  producer: string;
  schemaURL: string;
  run: { runId: string; facets?: Record<string, Facet> };
  job: { namespace: string; name: string; facets?: Record<string, Facet> };
  inputs: DatasetJson[];
  outputs: DatasetJson[];
}

export interface JobEventJson {
  eventTime: string;
  producer: string;
  schemaURL: string;
  job: { namespace: string; name: string; facets?: Record<string, Facet> };
  inputs: DatasetJson[];
  outputs: DatasetJson[];
}

/**
 * The job's name: `listings-sync.{command}`, a shard's with `.shard-{I}-of-{N}`, so that
 * each nightly job (a CronJob's `sync`, each shard of it) is one job in the catalog. The
 * credentials are the job's tags (and the inputs' names), not its name: a credential added
 * to the file does not start a new job.
 */
export function jobName(info: Pick<LineageRunInfo, 'command' | 'shard'>): string {
  const shard = info.shard ? `.shard-${info.shard.replace('/', '-of-')}` : '';
  return `${INTEGRATION}.${info.command}${shard}`;
}

function facet(context: EventContext, kind: keyof typeof FACET_SCHEMAS, body: object): Facet {
  return { _producer: context.producer, _schemaURL: FACET_SCHEMAS[kind], ...body };
}

function jobFacets(context: EventContext, info: LineageRunInfo, jobType: string) {
  return {
    jobType: facet(context, 'jobType', {
      processingType: 'BATCH',
      integration: INTEGRATION,
      jobType,
    }),
    tags: facet(context, 'tags', {
      tags: [
        ...info.credentials.map((c) => ({ key: 'credential', value: c.name, source: INTEGRATION })),
        ...(info.shard ? [{ key: 'shard', value: info.shard, source: INTEGRATION }] : []),
        { key: 'streams', value: info.streams.join(','), source: INTEGRATION },
      ],
    }),
  };
}

function tableOutput(
  context: EventContext,
  at: WarehouseLocation,
  table: string,
  rows: number | undefined,
): DatasetJson {
  const fields = tableFields(table);
  return {
    ...tableDataset(at, table),
    ...(fields ? { facets: { schema: facet(context, 'schema', { fields }) } } : {}),
    ...(rows !== undefined
      ? {
          outputFacets: {
            outputStatistics: facet(context, 'outputStatistics', { rowCount: rows }),
          },
        }
      : {}),
  };
}

/** One RunEvent of `info`'s run: START (no `end`), or the one `end.status` calls for. */
export function runEvent(
  context: EventContext,
  info: LineageRunInfo,
  eventTime: Date,
  end?: LineageRunEnd,
): RunEventJson {
  const eventType: EventType = end ? endEventType(end.status) : 'START';
  const runFacets: Record<string, Facet> = {};
  if (context.parent) {
    runFacets.parent = facet(context, 'parent', {
      run: { runId: context.parent.runId },
      job: { namespace: context.parent.namespace, name: context.parent.name },
    });
  }
  if (end && end.status === 'failed' && end.error) {
    runFacets.errorMessage = facet(context, 'errorMessage', {
      message: end.error.slice(0, 1000),
      programmingLanguage: 'TypeScript',
    });
  }
  const at = context.warehouse;
  const outputs = at
    ? end
      ? Object.entries(end.rowsWritten)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([table, rows]) => tableOutput(context, at, table, rows))
      : []
    : [];
  return {
    eventType,
    eventTime: eventTime.toISOString(),
    producer: context.producer,
    schemaURL: RUN_EVENT_SCHEMA,
    run: { runId: info.runId, ...(Object.keys(runFacets).length ? { facets: runFacets } : {}) },
    job: {
      namespace: context.namespace,
      name: jobName(info),
      facets: jobFacets(context, info, info.command === 'airbyte.read' ? 'SOURCE' : 'JOB'),
    },
    inputs: upstreamDatasets(
      info.credentials,
      end ? end.operations : (info.operations ?? plannedOperations(info.streams)),
    ),
    outputs,
  };
}

/**
 * The JobEvents of the documented views (static lineage, sent with each run's last event
 * but a failed one's): a job per view (`listings-sync.view.{view}`), its inputs the tables
 * the view reads, its output the view. Not only those of the tables a run counted: the
 * read models a run writes (rank_months, listing_accuracy_days, …) have no counts.
 */
export function viewEvents(context: EventContext, eventTime: Date): JobEventJson[] {
  const at = context.warehouse;
  if (!at) return [];
  return (Object.entries(VIEW_TABLES) as [string, readonly string[]][]).map(([view, reads]) => ({
    eventTime: eventTime.toISOString(),
    producer: context.producer,
    schemaURL: JOB_EVENT_SCHEMA,
    job: {
      namespace: context.namespace,
      name: `${INTEGRATION}.view.${view}`,
      facets: {
        jobType: facet(context, 'jobType', {
          processingType: 'BATCH',
          integration: INTEGRATION,
          jobType: 'VIEW',
        }),
      },
    },
    inputs: reads.map((table) => tableOutput(context, at, table, undefined)),
    outputs: [tableDataset(at, view)],
  }));
}
