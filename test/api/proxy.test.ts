/**
 * Behind an HTTP proxy (docs/deploy.md, "Behind an HTTP proxy"): with HTTP_PROXY or
 * HTTPS_PROXY set, upstream requests go through the proxy; NO_PROXY hosts go direct; the
 * proxy's password never appears in an error. The proxy here is a small local one that
 * answers CONNECT (a tunnel) and absolute-form requests, and counts both.
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertSinksFromConfig } from '../../src/alerts/configured-sinks.ts';
import { deliveryDispatcher } from '../../src/alerts/post.ts';
import { slackSink } from '../../src/alerts/slack-sink.ts';
import { proxyFromEnvironment } from '../../src/api/client.ts';
import { ApiError, createApiClient, listBusinesses } from '../../src/api/index.ts';
import { loadConfig } from '../../src/config/index.ts';
import { type RunningSandbox, startSandbox } from '../../src/sandbox/server.ts';

interface LocalProxy {
  url: string;
  /** Each CONNECT target or absolute URL the proxy was asked for. */
  seen: string[];
  /** Proxy-Authorization headers received. */
  authorizations: string[];
  close(): Promise<void>;
}

async function startProxy(): Promise<LocalProxy> {
  const seen: string[] = [];
  const authorizations: string[] = [];
  const sockets = new Set<{ destroy(): void }>();
  const server = http.createServer((request, response) => {
    // Absolute form: GET http://host:port/path HTTP/1.1
    seen.push(request.url ?? '');
    if (request.headers['proxy-authorization']) {
      authorizations.push(request.headers['proxy-authorization']);
    }
    const target = new URL(request.url ?? '');
    const upstream = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: request.method,
        headers: request.headers,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    request.pipe(upstream);
  });
  server.on('connect', (request, client, head) => {
    seen.push(request.url ?? '');
    if (request.headers['proxy-authorization']) {
      authorizations.push(request.headers['proxy-authorization']);
    }
    const [host, port] = (request.url ?? '').split(':');
    const upstream = net.connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream).add(client);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  server.on('connection', (socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    authorizations,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('upstream requests behind an HTTP proxy', () => {
  let sandbox: RunningSandbox;
  let proxy: LocalProxy;

  beforeAll(async () => {
    sandbox = await startSandbox({ seed: 3, accounts: 1, businessesPerAccount: 2 });
    proxy = await startProxy();
  });
  afterAll(async () => {
    await proxy.close();
    await sandbox.close();
  });

  it('sends requests through HTTP_PROXY and gets the same answer', async () => {
    const credential = sandbox.credentials[0]!;
    const sandboxHost = new URL(credential.baseUrl).host;
    const direct = createApiClient();
    const proxied = createApiClient({ proxy: { httpProxy: proxy.url } });
    try {
      const before = proxy.seen.length;
      const viaProxy = await listBusinesses(proxied, credential);
      expect(proxy.seen.length).toBeGreaterThan(before);
      expect(proxy.seen.slice(before).every((target) => target.includes(sandboxHost))).toBe(true);
      const straight = await listBusinesses(direct, credential);
      expect(viaProxy.records).toEqual(straight.records);
    } finally {
      await direct.close();
      await proxied.close();
    }
  });

  it('goes direct to a host in NO_PROXY', async () => {
    const credential = sandbox.credentials[0]!;
    const api = createApiClient({
      proxy: { httpProxy: proxy.url, noProxy: new URL(credential.baseUrl).hostname },
    });
    try {
      const before = proxy.seen.length;
      const list = await listBusinesses(api, credential);
      expect(list.records).toHaveLength(2);
      expect(proxy.seen.length).toBe(before);
    } finally {
      await api.close();
    }
  });

  it("passes the proxy's credentials to it and never names its password in an error", async () => {
    const credential = sandbox.credentials[0]!;
    const withLogin = new URL(proxy.url);
    withLogin.username = 'ops';
    withLogin.password = 'proxy-pass-s3cret';
    const api = createApiClient({ proxy: { httpProxy: withLogin.toString() } });
    try {
      await listBusinesses(api, credential);
      expect(proxy.authorizations.at(-1)).toBe(
        `Basic ${Buffer.from('ops:proxy-pass-s3cret').toString('base64')}`,
      );
    } finally {
      await api.close();
    }
    // A proxy that is not there: the call fails as an upstream error, without the password.
    const gone = new URL('http://ops:proxy-pass-s3cret@127.0.0.1:1/');
    const broken = createApiClient({
      proxy: { httpProxy: gone.toString() },
      retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
    });
    try {
      const error = await listBusinesses(broken, credential).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ApiError);
      expect(String((error as Error).message)).not.toContain('proxy-pass-s3cret');
      expect(JSON.stringify(error)).not.toContain('proxy-pass-s3cret');
    } finally {
      await broken.close();
    }
  });
});

describe('proxyFromEnvironment', () => {
  it('reads the standard variables, lowercase first, and is undefined without a proxy', () => {
    expect(proxyFromEnvironment({})).toBeUndefined();
    expect(proxyFromEnvironment({ NO_PROXY: 'localhost' })).toBeUndefined();
    expect(
      proxyFromEnvironment({
        HTTPS_PROXY: 'http://upper:3128',
        https_proxy: 'http://lower:3128',
        NO_PROXY: '.internal',
      }),
    ).toEqual({ httpProxy: undefined, httpsProxy: 'http://lower:3128', noProxy: '.internal' });
  });
});

describe('alert deliveries behind an HTTP proxy', () => {
  it('go through the configured proxy, and the configuration reads its variables once', async () => {
    const proxy = await startProxy();
    const posts: string[] = [];
    const receiver = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      request.on('end', () => {
        posts.push(body);
        response.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/T1`;
    const dispatcher = deliveryDispatcher({ httpProxy: proxy.url });
    try {
      const status = await slackSink(url, { dispatcher }).sendTest?.(new Date(), undefined);
      expect(status).toBe(200);
      expect(posts).toHaveLength(1);
      expect(proxy.seen.some((target) => target.includes(new URL(url).host))).toBe(true);
      expect(deliveryDispatcher(undefined)).toBeUndefined();
      // The configuration carries the proxy to the sinks it builds.
      const config = loadConfig({
        http_proxy: proxy.url,
        HTTP_PROXY: 'http://ignored:1',
        ALERT_SLACK_WEBHOOK_URL: url,
      });
      expect(config.proxy).toEqual({
        httpProxy: proxy.url,
        httpsProxy: undefined,
        noProxy: undefined,
      });
      const before = proxy.seen.length;
      const [sink] = alertSinksFromConfig(config);
      await sink!.sendTest?.(new Date(), undefined);
      expect(proxy.seen.length).toBe(before + 1);
      expect(loadConfig({}).proxy).toBeUndefined();
    } finally {
      await (dispatcher as { close(): Promise<void> } | undefined)?.close();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
      await proxy.close();
    }
  });
});
