/**
 * `serve` and `sync` from the command line, in-process through `main(argv, io)`: stopping
 * serve (what SIGTERM does) ends it cleanly with exit 0, a port already taken is refused
 * naming the address and its settings, and a CLI sync hands the alerts it raised to the
 * configured sink before it exits. The real signal: test/serve/signal.e2e.test.ts.
 */
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../../src/sandbox/server.ts';
import { type SyncCommandFixture, startCli as start, startSyncFixture } from '../helpers/cli.ts';

const ALERT_SECRET = 'alert-secret-for-cli-test';

describe('serve and sync from the command line', () => {
  let fixture: SyncCommandFixture;
  let sandbox: RunningSandbox;
  let env: Record<string, string>;

  beforeAll(async () => {
    fixture = await startSyncFixture(
      'pglite',
      { seed: 5, accounts: 1, businessesPerAccount: 12 },
      'ls-serve-cli-',
    );
    sandbox = fixture.sandbox;
    env = await fixture.prepare({ migrate: false });
    const migrated = await start(['migrate'], env).done;
    expect(migrated.code, migrated.stderr).toBe(0);
  });
  afterAll(() => fixture?.close());

  it('serve answers on its port and exits 0 when stopped (SIGTERM)', async () => {
    const serve = start(['serve'], {
      ...env,
      WEBHOOK_SECRET: 's1',
      SYNC_SCHEDULE: 'off',
      PORT: '0',
    });
    const url = (await serve.waitForStdout(/serve on (http:\/\/\S+):/))[1];
    expect(url).toMatch(/^http:\/\/\S+:\d+$/);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    serve.stop('SIGTERM');
    const ended = await serve.done;
    expect(ended.code, ended.stderr).toBe(0);
    expect(ended.stderr).toContain('signal received: shutting down');
    expect(ended.stderr).not.toContain('s1"');
  });

  it('listens where LISTEN_ADDRESS and METRICS_LISTEN_ADDRESS say, and its line prints the addresses bound', async () => {
    const serve = start(['serve'], {
      ...env,
      WEBHOOK_SECRET: 's1',
      SYNC_SCHEDULE: 'off',
      PORT: '0',
      LISTEN_ADDRESS: '127.0.0.1',
      METRICS_LISTEN_ADDRESS: '127.0.0.1',
    });
    try {
      const line = await serve.waitForStdout(
        /serve on (http:\/\/\S+):.*\(bound to (\S+)\); metrics on (http:\/\/\S+)\/metrics \(bound to (\S+)\)/,
      );
      const [, url, address, metricsUrl, metricsAddress] = line;
      const port = Number(new URL(url!).port);
      const metricsPort = Number(new URL(metricsUrl!).port);
      expect(address).toBe(`127.0.0.1:${port}`);
      expect(metricsAddress).toBe(`127.0.0.1:${metricsPort}`);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${metricsUrl}/metrics`)).status).toBe(200);
      // Bound to the loopback alone: on this machine's other addresses nothing answers.
      const others = Object.values(networkInterfaces())
        .flat()
        .filter((i) => i && i.family === 'IPv4' && !i.internal)
        .map((i) => i!.address);
      for (const other of others) {
        for (const p of [port, metricsPort]) {
          const refused = await new Promise<string>((resolve) => {
            const socket = net.connect(p, other);
            socket.once('connect', () => {
              socket.destroy();
              resolve('connected');
            });
            socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
          });
          expect(refused, `${other}:${p}`).toBe('ECONNREFUSED');
        }
      }
    } finally {
      serve.stop('SIGTERM');
      expect((await serve.done).code).toBe(0);
    }
  });

  it('refuses a LISTEN_ADDRESS that is not an IP address, naming it', async () => {
    const serve = await start(['serve'], {
      ...env,
      WEBHOOK_SECRET: 's1',
      SYNC_SCHEDULE: 'off',
      PORT: '0',
      METRICS_LISTEN_ADDRESS: 'my-laptop',
    }).done;
    expect(serve.code).toBe(1);
    expect(serve.stderr).toContain(
      'METRICS_LISTEN_ADDRESS must be an IP address to listen on, such as 0.0.0.0 (every interface) or 127.0.0.1 (this machine only)',
    );
  });

  it.each([
    ['PORT', 'LISTEN_ADDRESS', 'for webhooks'],
    ['METRICS_PORT', 'METRICS_LISTEN_ADDRESS', 'for /metrics'],
  ] as const)(
    'a %s already in use: exit 1, the address and the settings that chose it named',
    async (portSetting, hostSetting, what) => {
      const taken = net.createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      const port = (taken.address() as AddressInfo).port;
      try {
        const serve = await start(['serve'], {
          ...env,
          WEBHOOK_SECRET: 's1',
          SYNC_SCHEDULE: 'off',
          PORT: '0',
          METRICS_PORT: '0',
          LISTEN_ADDRESS: '127.0.0.1',
          METRICS_LISTEN_ADDRESS: '127.0.0.1',
          [portSetting]: String(port),
        }).done;
        expect(serve.code, serve.stderr).toBe(1);
        expect(serve.stderr).toContain(
          `listings-sync: serve cannot listen on 127.0.0.1:${port} ${what} ` +
            `(${portSetting}=${port}, ${hostSetting}=127.0.0.1): the port is already in use ` +
            `(EADDRINUSE: another serve, or another program). Stop that one, or set ${portSetting} to a free port.`,
        );
      } finally {
        await new Promise((resolve) => taken.close(resolve));
      }
    },
  );

  it('a CLI sync delivers the alerts it raised, signed, before it exits', async () => {
    const received: { body: string; signature: string | undefined; key: string | undefined }[] = [];
    const receiver: Server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => {
        body += chunk;
      });
      request.on('end', () => {
        received.push({
          body,
          signature: request.headers['x-service-signature'] as string | undefined,
          key: request.headers['idempotency-key'] as string | undefined,
        });
        response.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as AddressInfo).port;
    try {
      const sinkEnv = {
        ...env,
        ALERT_WEBHOOK_URL: `http://127.0.0.1:${port}/alerts`,
        ALERT_WEBHOOK_SECRET: ALERT_SECRET,
      };
      const first = await start(['sync'], sinkEnv).done;
      expect(first.code, first.stderr).toBe(0);
      expect(received).toHaveLength(0); // the first sync is the baseline
      let raised = 0;
      for (let day = 0; day < 10 && raised === 0; day++) {
        sandbox.advanceDays(1);
        const next = await start(['sync'], sinkEnv).done;
        expect(next.code, next.stderr).toBe(0);
        raised = Number(/(\d+) alerts\./.exec(next.stdout)?.[1] ?? 0);
      }
      expect(raised).toBeGreaterThan(0);
      expect(received.length).toBe(raised);
      for (const delivery of received) {
        const expected = `sha256=${createHmac('sha256', ALERT_SECRET).update(delivery.body).digest('hex')}`;
        expect(delivery.signature).toBe(expected);
        expect(delivery.key).toMatch(/^listing_inaccurate:/);
      }
    } finally {
      receiver.close();
    }
  });
});
