/**
 * On a terminal, a sync's log lines are human-readable single lines printed above the
 * progress bar, never inside it; off a terminal they stay JSON. The terminal is a stream
 * that says it is a TTY, and everything written to it is read back.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, formatHumanLine } from '../../src/log.ts';
import { startTerminalBar } from '../../src/sync/progress.ts';

function fakeTerminal(): { stream: NodeJS.WriteStream; text: () => string } {
  const stream = new PassThrough() as unknown as NodeJS.WriteStream & PassThrough;
  Object.assign(stream, { isTTY: true, columns: 160, rows: 40 });
  let text = '';
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { stream, text: () => text };
}

/** What a person sees, line by line: escape sequences and carriage-return redraws removed. */
function screenLines(raw: string): string[] {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escape sequences
  const plain = raw.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');
  return plain
    .split('\n')
    .map((line) => line.split('\r').pop() ?? '')
    .filter((line) => line.trim() !== '');
}

describe('logs on a terminal', () => {
  it('formats a JSON record as one line: time, level, message, fields; errors by their message', () => {
    const line = formatHumanLine(
      JSON.stringify({
        level: 'warn',
        time: '2026-03-10T12:03:04.567Z',
        service: 'listings-sync',
        credential: 'east',
        businessId: 42,
        stream: 'reviews',
        err: {
          type: 'ApiError',
          code: 'UPSTREAM_UNAVAILABLE',
          message: 'upstream answered 503\nafter 5 attempts',
          stack: 'Error: …\n  at x',
        },
        msg: 'stream failed; its stored rows are left as they were',
      }),
    );
    expect(line).toBe(
      '12:03:04 WARN  stream failed; its stored rows are left as they were  credential=east  businessId=42  stream=reviews  err="UPSTREAM_UNAVAILABLE: upstream answered 503 after 5 attempts"\n',
    );
  });

  it('writes lists and objects without JSON quoting, so a field stays readable', () => {
    const line = formatHumanLine(
      JSON.stringify({
        level: 'info',
        time: '2026-03-10T12:03:04.567Z',
        streams: ['businesses', 'listings'],
        businesses: { listed: 50, synced: 49, failed: 1 },
        wrong: ['phone'],
        sites: ['Yahoo Local', 'Google'],
        msg: 'sync finished',
      }),
    );
    expect(line).toBe(
      '12:03:04 INFO  sync finished  streams=businesses,listings  businesses={listed:50,synced:49,failed:1}  wrong=phone  sites="Yahoo Local,Google"\n',
    );
  });

  it('prints log lines above the bar, whole, and the bar below them; after the bar, straight through', () => {
    const terminal = fakeTerminal();
    const fallback = fakeTerminal();
    const logger = createLogger({ level: 'info', human: true, destination: fallback.stream });
    const bar = startTerminalBar(terminal.stream, 'sync [{bar}] {value}/{total} businesses');
    bar.update(1, 4, {});
    logger.warn({ businessId: 7, stream: 'listings', authToken: 'tok-secret-1' }, 'stream failed');
    bar.update(3, 4, {});
    logger.info('second line');
    bar.update(4, 4, {});
    bar.stop();
    logger.info('after the bar');

    const lines = screenLines(terminal.text());
    const warn = lines.findIndex((l) =>
      / WARN {2}stream failed {2}businessId=7 {2}stream=listings {2}authToken=\[REDACTED\]$/.test(
        l,
      ),
    );
    const info = lines.findIndex((l) => / INFO {2}second line$/.test(l));
    expect(warn).toBeGreaterThanOrEqual(0);
    expect(info).toBeGreaterThan(warn);
    // The bar's final state comes last, below the log lines, and no line mixes the two.
    expect(lines.at(-1)).toMatch(/^sync \[.+\] 4\/4 businesses$/);
    for (const line of lines)
      expect(line.includes('businesses') && line.includes('INFO')).toBe(false);
    expect(terminal.text()).not.toContain('{"level"');
    expect(terminal.text()).not.toContain('tok-secret-1');
    expect(fallback.text()).toMatch(/^\d\d:\d\d:\d\d INFO {2}after the bar\n$/);
  });

  it('off a terminal, records stay JSON lines', () => {
    const out = fakeTerminal();
    const logger = createLogger({ level: 'info', destination: out.stream });
    logger.warn({ businessId: 7 }, 'stream failed');
    expect(JSON.parse(out.text())).toMatchObject({
      level: 'warn',
      businessId: 7,
      msg: 'stream failed',
    });
  });
});
