/**
 * HTTP/1.1 over a raw socket, for the serve tests where the bytes are the point: an answer
 * read off the socket whole (or not), a `100 Continue` sent or not, a connection reset.
 */
import net from 'node:net';

export interface RawAnswer {
  /** The final status, undefined when no final response arrived. */
  status: number | undefined;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
  /** The final response arrived whole: its head and all Content-Length bytes of its body. */
  complete: boolean;
  /** An interim `100 Continue` came first. */
  sawContinue: boolean;
  /** The socket's error (`ECONNRESET`, `EPIPE`), when it had one. */
  error: string | undefined;
}

export interface RawExchange {
  socket: net.Socket;
  /** Writes bytes of the request; a write to a closed socket is ignored (the answer says it). */
  write(data: string | Buffer): Promise<void>;
  /** Resolves once `100 Continue`, a final answer or the close arrives. */
  interim: Promise<'continue' | 'final' | 'closed'>;
  /** Resolves once the final response is whole, or the socket closed. */
  answer: Promise<RawAnswer>;
}

/** Parses what the socket delivered: interim 100s, then one final response. */
function parse(received: Buffer): Omit<RawAnswer, 'error'> {
  let text = received.toString('latin1');
  let sawContinue = false;
  while (/^HTTP\/1\.1 100 [^\r]*\r\n\r\n/.test(text)) {
    sawContinue = true;
    text = text.slice(text.indexOf('\r\n\r\n') + 4);
  }
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: undefined, headers: {}, body: '', complete: false, sawContinue };
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0)
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const body = text.slice(end + 4);
  const length = Number(headers['content-length'] ?? Number.NaN);
  return {
    status: Number.isNaN(status) ? undefined : status,
    headers,
    body: Number.isNaN(length) ? body : body.slice(0, length),
    complete: !Number.isNaN(length) && body.length >= length,
    sawContinue,
  };
}

export interface RawExchangeOptions {
  host?: string;
  /**
   * Keep the connection after the answer is whole, and resolve `answer` when it closes:
   * for a sender that goes on sending its body whatever the answer (a reset shows as
   * `error`).
   */
  untilClose?: boolean;
}

export async function rawExchange(
  port: number,
  options: RawExchangeOptions = {},
): Promise<RawExchange> {
  const { host = '127.0.0.1', untilClose = false } = options;
  const socket = net.connect(port, host);
  const chunks: Buffer[] = [];
  let error: string | undefined;
  let settleInterim: (value: 'continue' | 'final' | 'closed') => void = () => {};
  const interim = new Promise<'continue' | 'final' | 'closed'>((resolve) => {
    settleInterim = resolve;
  });
  const answer = new Promise<RawAnswer>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const parsed = parse(Buffer.concat(chunks));
      if (parsed.sawContinue) settleInterim('continue');
      if (parsed.status !== undefined) settleInterim('final');
      if (parsed.complete && !untilClose) {
        resolve({ ...parsed, error });
        socket.destroy();
      }
    });
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.once('close', () => {
      settleInterim('closed');
      resolve({ ...parse(Buffer.concat(chunks)), error });
    });
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  return {
    socket,
    interim,
    answer,
    write: (data) =>
      new Promise<void>((resolve) => {
        if (socket.destroyed || !socket.writable) return resolve();
        socket.write(data, () => resolve());
      }),
  };
}
