/**
 * Minimal RESP client over node:net, used by the real-Redis test harness so
 * that the harness does not depend on ioredis (the library under test).
 *
 * One connection per call: connect, send one command, read one reply, close.
 */
import net from 'node:net';

export type RespValue = string | number | null | RespError | RespValue[];

export class RespError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RespError';
  }
}

export interface RawCommandOptions {
  host?: string;
  /** Overall deadline for connect + reply, in ms (default 1000). */
  timeoutMs?: number;
}

/** Encode a command as a RESP array of bulk strings. */
export function encodeCommand(args: readonly (string | number)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const a of args) {
    const b = Buffer.from(String(a));
    parts.push(Buffer.from(`$${b.length}\r\n`), b, Buffer.from('\r\n'));
  }
  return Buffer.concat(parts);
}

/**
 * Try to parse one RESP value from buf at offset. Returns undefined when the
 * buffer does not yet hold a complete value.
 */
export function parseReply(buf: Buffer, offset = 0): { value: RespValue; next: number } | undefined {
  const eol = buf.indexOf('\r\n', offset);
  if (eol < 0) return undefined;
  const type = String.fromCharCode(buf[offset]!);
  const line = buf.toString('utf8', offset + 1, eol);
  const after = eol + 2;
  switch (type) {
    case '+':
      return { value: line, next: after };
    case '-':
      return { value: new RespError(line), next: after };
    case ':':
      return { value: Number(line), next: after };
    case '$': {
      const len = Number(line);
      if (len < 0) return { value: null, next: after };
      if (buf.length < after + len + 2) return undefined;
      return { value: buf.toString('utf8', after, after + len), next: after + len + 2 };
    }
    case '*': {
      const n = Number(line);
      if (n < 0) return { value: null, next: after };
      const items: RespValue[] = [];
      let pos = after;
      for (let i = 0; i < n; i++) {
        const r = parseReply(buf, pos);
        if (!r) return undefined;
        items.push(r.value);
        pos = r.next;
      }
      return { value: items, next: pos };
    }
    case '_':
      return { value: null, next: after };
    default:
      throw new Error(`unsupported RESP type byte ${JSON.stringify(type)}`);
  }
}

/**
 * Send one command and resolve with its reply. Error replies resolve as a
 * RespError value (they are not thrown); connection errors and timeouts
 * reject.
 */
export function rawCommand(port: number, args: readonly (string | number)[], opts: RawCommandOptions = {}): Promise<RespValue> {
  const host = opts.host ?? '127.0.0.1';
  const timeoutMs = opts.timeoutMs ?? 1000;
  return new Promise<RespValue>((resolve, reject) => {
    let buf = Buffer.alloc(0);
    let done = false;
    const socket = net.connect({ host, port });
    const finish = (err: Error | undefined, value?: RespValue): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(value as RespValue);
    };
    const timer = setTimeout(() => {
      const e = new Error(`no reply from ${host}:${port} within ${timeoutMs} ms to ${String(args[0])}`) as Error & {
        code?: string;
      };
      e.code = 'ETIMEDOUT';
      finish(e);
    }, timeoutMs);
    socket.on('connect', () => socket.write(encodeCommand(args)));
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      try {
        const r = parseReply(buf);
        if (r) finish(undefined, r.value);
      } catch (e) {
        finish(e as Error);
      }
    });
    socket.on('error', (e) => finish(e));
    socket.on('close', () => finish(new Error(`connection to ${host}:${port} closed before a reply`)));
  });
}

/**
 * rawCommand for setup steps (ACL SETUSER, CONFIG SET, CLUSTER ...): an error
 * reply rejects, naming the command and quoting the server, so a server that
 * refuses a setup step fails the setup instead of a later test for an
 * unrelated-looking reason.
 */
export async function checkedCommand(
  port: number,
  args: readonly (string | number)[],
  opts: RawCommandOptions = {},
): Promise<Exclude<RespValue, RespError>> {
  const reply = await rawCommand(port, args, opts);
  if (reply instanceof RespError) {
    // Two words at most: the rest may hold a password (ACL SETUSER ... >secret).
    throw new RespError(`${args.slice(0, 2).join(' ')} on ${opts.host ?? '127.0.0.1'}:${port} refused: ${reply.message}`);
  }
  return reply;
}

/** True when the server answers PING with PONG within timeoutMs. Never throws. */
export async function ping(port: number, timeoutMs = 500, host = '127.0.0.1'): Promise<boolean> {
  try {
    return (await rawCommand(port, ['PING'], { host, timeoutMs })) === 'PONG';
  } catch {
    return false;
  }
}

/**
 * Whether a TCP connection to host:port is accepted (a SIGSTOPped server still
 * accepts via the kernel backlog; a killed one refuses). Never throws.
 */
export function canConnect(port: number, timeoutMs = 500, host = '127.0.0.1'): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(false);
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(false);
    });
  });
}
