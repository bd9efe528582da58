/**
 * A local OpenLineage receiver for the tests: an HTTP server on an ephemeral port that
 * takes every POST, keeps its JSON body and headers, and answers 201 (or never, when
 * silent); and the subset of the spec (OpenLineage.json 2-0-2 and its facets) the events
 * are held to, written out here from the spec's required fields.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';

/** An event as received: read field by field, as JSON. */
// biome-ignore lint/suspicious/noExplicitAny: JSON read field by field
export type Event = Record<string, any>;

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  text: string;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** The RunEvents, in the order they came. */
  runEvents(): Event[];
  /** The JobEvents (no `run`). */
  jobEvents(): Event[];
  close(): Promise<void>;
}

export async function startReceiver(options: { silent?: boolean } = {}): Promise<Receiver> {
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => {
      text += chunk;
    });
    request.on('end', () => {
      received.push({
        path: request.url ?? '',
        headers: request.headers,
        body: JSON.parse(text) as Record<string, unknown>,
        text,
      });
      if (!options.silent) response.writeHead(201).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    runEvents: () => received.map((r) => r.body).filter((body) => 'run' in body),
    jobEvents: () => received.map((r) => r.body).filter((body) => !('run' in body)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port that was listened on and closed: connections to it are refused. */
export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** BaseFacet: `_producer` and `_schemaURL`, both URIs, required of every facet. */
const facet = (properties: object = {}, required: string[] = []) => ({
  type: 'object',
  required: ['_producer', '_schemaURL', ...required],
  properties: {
    _producer: { type: 'string', format: 'uri' },
    _schemaURL: { type: 'string', format: 'uri' },
    ...properties,
  },
});
const facets = (known: Record<string, object>) => ({
  type: 'object',
  properties: known,
  additionalProperties: facet(),
});
const dataset = {
  type: 'object',
  required: ['namespace', 'name'],
  properties: {
    namespace: { type: 'string', minLength: 1 },
    name: { type: 'string', minLength: 1 },
    facets: facets({
      // SchemaDatasetFacet: fields[], each with a name.
      schema: facet(
        {
          fields: {
            type: 'array',
            items: {
              type: 'object',
              required: ['name'],
              properties: { name: { type: 'string' }, type: { type: 'string' } },
            },
          },
        },
        ['fields'],
      ),
    }),
    // OutputStatisticsOutputDatasetFacet: rowCount, an integer.
    outputFacets: facets({
      outputStatistics: facet({ rowCount: { type: 'integer', minimum: 0 } }, ['rowCount']),
    }),
  },
};
const job = {
  type: 'object',
  required: ['namespace', 'name'],
  properties: {
    namespace: { type: 'string', minLength: 1 },
    name: { type: 'string', minLength: 1 },
    facets: facets({
      // JobTypeJobFacet: processingType and integration required.
      jobType: facet(
        {
          processingType: { enum: ['BATCH', 'STREAMING', 'SERVICE'] },
          integration: { type: 'string' },
          jobType: { type: 'string' },
        },
        ['processingType', 'integration'],
      ),
    }),
  },
};
/** BaseEvent: eventTime (date-time), producer (uri), schemaURL (uri). */
const base = {
  eventTime: { type: 'string', format: 'date-time' },
  producer: { type: 'string', format: 'uri' },
  schemaURL: { type: 'string', format: 'uri' },
  job,
  inputs: { type: 'array', items: dataset },
  outputs: { type: 'array', items: dataset },
};

export const RUN_EVENT_SUBSET = {
  type: 'object',
  required: ['eventTime', 'producer', 'schemaURL', 'run', 'job'],
  properties: {
    ...base,
    eventType: { enum: ['START', 'RUNNING', 'COMPLETE', 'ABORT', 'FAIL', 'OTHER'] },
    run: {
      type: 'object',
      required: ['runId'],
      properties: {
        runId: { type: 'string', format: 'uuid' },
        facets: facets({
          // ParentRunFacet: run.runId (uuid) and job.namespace, job.name.
          parent: facet(
            {
              run: {
                type: 'object',
                required: ['runId'],
                properties: { runId: { type: 'string', format: 'uuid' } },
              },
              job: { type: 'object', required: ['namespace', 'name'] },
            },
            ['run', 'job'],
          ),
          // ErrorMessageRunFacet: message and programmingLanguage.
          errorMessage: facet(
            { message: { type: 'string' }, programmingLanguage: { type: 'string' } },
            ['message', 'programmingLanguage'],
          ),
        }),
      },
    },
  },
};

export const JOB_EVENT_SUBSET = {
  type: 'object',
  required: ['eventTime', 'producer', 'schemaURL', 'job'],
  properties: base,
};

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats.default(ajv);
const validateRun = ajv.compile(RUN_EVENT_SUBSET);
const validateJob = ajv.compile(JOB_EVENT_SUBSET);

/** The spec subset's complaints about `event` ([] when it holds). */
export function specErrors(event: unknown, kind: 'run' | 'job' = 'run'): string[] {
  const validate = kind === 'run' ? validateRun : validateJob;
  if (validate(event)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}
