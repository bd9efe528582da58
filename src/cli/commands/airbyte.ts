/**
 * `listings-sync airbyte spec | check --config F | discover --config F | read --config F
 * --catalog F [--state F]`: the Airbyte source (docs/airbyte.md). Standard output carries
 * protocol messages only, one JSON object a line; log lines go there as LOG messages.
 * Exit codes: 0, also for a `check` that answers FAILED; 1 after an ERROR trace.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { apiStats, createConfiguredApiClient } from '../../api/client.ts';
import type { ApiClient } from '../../api/index.ts';
import type { Config } from '../../config/index.ts';
import { ConfigError } from '../../config/index.ts';
import { NO_CALLS, startLineageRun, syncRunEnd } from '../../lineage/run.ts';
import { LINEAGE_HELP } from '../../lineage/settings.ts';
import { createLogger, type Logger } from '../../log.ts';
import { EXIT } from '../command/exit-codes.ts';
import type { CliIo } from '../command/io.ts';

export function registerAirbyteCommand(program: Command, io: CliIo): void {
  const airbyte = program
    .command('airbyte')
    .description(
      'Run as an Airbyte source: spec, check, discover and read speak the Airbyte protocol on standard output (docs/airbyte.md).',
    );
  const emitter = emitterFor(io);

  airbyte
    .command('spec')
    .description("Print the connector's specification: the JSON schema of its configuration.")
    .action(async () => {
      const { spec } = await import('../../airbyte/source.ts');
      emitter()({ type: 'SPEC', spec: spec() });
      io.exitCode = EXIT.ok;
    });

  registerCheckCommand(airbyte, io);
  registerDiscoverCommand(airbyte, io);
  registerReadCommand(airbyte, io);
}

/** Each protocol message as one JSON line on standard output. */
function emitterFor(io: CliIo): () => (message: unknown) => void {
  return () => {
    return (message: unknown) => io.stdout(`${JSON.stringify(message)}\n`);
  };
}

/** `airbyte check`: the configuration and each credential, as a CONNECTION_STATUS. */
function registerCheckCommand(airbyte: Command, io: CliIo): void {
  const emitter = emitterFor(io);
  airbyte
    .command('check')
    .description('Check the configuration and each credential (one cheap authenticated read).')
    .requiredOption('--config <file>', 'the configuration, a JSON file (see spec)')
    .action(async (options: { config: string }) => {
      const emit = emitter();
      const { readSourceConfigFile } = await import('../../airbyte/config.ts');
      const { check } = await import('../../airbyte/source.ts');
      let source: ReturnType<typeof readSourceConfigFile>;
      try {
        source = readSourceConfigFile(options.config);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        emit({
          type: 'CONNECTION_STATUS',
          connectionStatus: { status: 'FAILED', message: error.message },
        });
        io.exitCode = EXIT.ok;
        return;
      }
      const logger = airbyteLogger(io, source.config);
      warnIgnored(logger, source.ignored);
      const api = createApi(io, source.config, logger);
      try {
        emit({ type: 'CONNECTION_STATUS', connectionStatus: await check(source, api) });
      } finally {
        await api.close();
      }
      io.exitCode = EXIT.ok;
    });
}

/** `airbyte discover`: the catalog, each stream with its schema, key and sync modes. */
function registerDiscoverCommand(airbyte: Command, io: CliIo): void {
  const emitter = emitterFor(io);
  airbyte
    .command('discover')
    .description('Print the catalog: each stream, its JSON schema, primary key and sync modes.')
    .requiredOption('--config <file>', 'the configuration, a JSON file (see spec)')
    .action(async (options: { config: string }) => {
      const emit = emitter();
      const { readSourceConfigFile } = await import('../../airbyte/config.ts');
      const { discover } = await import('../../airbyte/source.ts');
      await withTrace(io, emit, async () => {
        const source = readSourceConfigFile(options.config);
        warnIgnored(airbyteLogger(io, source.config), source.ignored);
        emit({ type: 'CATALOG', catalog: discover(source) });
      });
    });
}

/** `airbyte read`: the configured catalog's streams as RECORD and STATE messages, with lineage. */
function registerReadCommand(airbyte: Command, io: CliIo): void {
  const emitter = emitterFor(io);
  airbyte
    .command('read')
    .description(
      'Read the streams of a configured catalog as RECORD messages, with STATE after each stream.',
    )
    .addHelpText('after', LINEAGE_HELP)
    .requiredOption('--config <file>', 'the configuration, a JSON file (see spec)')
    .requiredOption('--catalog <file>', 'the configured catalog, a JSON file')
    .option('--state <file>', "the state a previous read wrote (its STATE messages' state objects)")
    .action(async (options: { config: string; catalog: string; state?: string }) => {
      const emit = emitter();
      const { readSourceConfigFile } = await import('../../airbyte/config.ts');
      const source = await import('../../airbyte/source.ts');
      await withTrace(io, emit, async () => {
        const config = readSourceConfigFile(options.config);
        const catalog = source.parseConfiguredCatalog(readJson(options.catalog, '--catalog'));
        const state = source.parseState(
          options.state === undefined ? undefined : readJson(options.state, '--state'),
        );
        const logger = airbyteLogger(io, config.config);
        warnIgnored(logger, config.ignored);
        const api = createApi(io, config.config, logger);
        // Lineage (docs/lineage.md): START now, not waited for; off, nothing is loaded.
        const before = apiStats(api);
        const lineage = startLineageRun(
          {
            runId: randomUUID(),
            command: 'airbyte.read',
            credentials: config.credentials,
            streams: [...catalog.streams.keys()],
          },
          { logger },
        );
        try {
          const failures = await source.read({
            source: config,
            catalog: catalog.streams,
            unknownStreams: catalog.unknown,
            state,
            api,
            logger,
            emit,
            signal: io.signal,
            ...(io.services?.now ? { now: io.services.now } : {}),
          });
          for (const failure of failures) emit(source.failureMessage(failure, io.services?.now));
          io.exitCode = failures.length === 0 ? EXIT.ok : EXIT.fatal;
          const failed = failures.map((f) => f.stream).join(', ');
          await lineage?.end(
            syncRunEnd(
              io.signal.aborted ? 'interrupted' : failures.length ? 'failed' : 'succeeded',
              {},
              { before, after: apiStats(api) },
              failures.length ? `streams that failed: ${failed}` : undefined,
            ),
          );
        } finally {
          // A read that threw still ends its lineage run FAIL (after an end, nothing).
          await lineage?.end(syncRunEnd('failed', {}, NO_CALLS, 'the read stopped with an error'));
          await api.close();
        }
      });
    });
}

/** Runs `work`; a failure becomes an ERROR trace (config_error for a bad file) and exit 1. */
async function withTrace(
  io: CliIo,
  emit: (message: unknown) => void,
  work: () => Promise<void>,
): Promise<void> {
  const { failureTypeOf } = await import('../../airbyte/source.ts');
  const { errorTrace } = await import('../../airbyte/protocol.ts');
  try {
    io.exitCode = EXIT.ok;
    await work();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    emit(errorTrace({ message, failure_type: failureTypeOf(error) }));
    io.exitCode = EXIT.fatal;
  }
}

function readJson(path: string, option: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    throw new ConfigError(
      `${option} names "${path}", which cannot be read (${(cause as NodeJS.ErrnoException).code ?? 'error'}).`,
    );
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ConfigError(`${option} "${path}" is not valid JSON.`);
  }
}

/** Keys of the configuration the source does not read: ignored, and said (docs/airbyte.md). */
function warnIgnored(logger: Logger, ignored: readonly string[]): void {
  if (ignored.length === 0) return;
  logger.warn(
    { ignored },
    `the configuration has ${ignored.map((k) => `"${k}"`).join(', ')}, which the source does not read: ignored`,
  );
}

const LEVELS: Record<string, string> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO',
  warn: 'WARN',
  error: 'ERROR',
  fatal: 'FATAL',
};

/** The program's logger (its redaction included), each line a LOG message on standard output. */
function airbyteLogger(io: CliIo, config: Config): Logger {
  if (io.services?.createLogger) return io.services.createLogger(config);
  return createLogger({
    level: config.logLevel,
    destination: {
      write: (line: string) => {
        const {
          level,
          msg,
          time: _time,
          service: _service,
          ...fields
        } = JSON.parse(line) as Record<string, unknown>;
        const detail = Object.keys(fields).length ? ` ${JSON.stringify(fields)}` : '';
        io.stdout(
          `${JSON.stringify({
            type: 'LOG',
            log: {
              level: LEVELS[String(level)] ?? 'INFO',
              message: `${String(msg ?? '')}${detail}`,
            },
          })}\n`,
        );
      },
    },
  });
}

function createApi(io: CliIo, config: Config, logger: Logger): ApiClient {
  return io.services?.createApi?.(config, logger) ?? createConfiguredApiClient(config, logger);
}
