/**
 * One throwaway redis-server on a free loopback port, for this consumer's test.
 *
 * redis-server runs under a tiny `sh -c` wrapper whose stdin is a pipe from this
 * process: the wrapper prints redis' PID, blocks reading stdin and, when stdin
 * closes (stop(), or this process died for any reason, SIGKILL included), kills
 * that PID and removes the data dir. Signals only ever go to that PID.
 * Binary: env REDLOCK_TEST_SERVER or `redis-server`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const HOST = '127.0.0.1';
const WRAPPER = [
  '"$0" "$@" >"$REDIS_DIR/redis.log" 2>&1 </dev/null &',
  'pid=$!',
  'echo "$pid"',
  'read -r _ || :',
  'kill -9 "$pid" 2>/dev/null',
  'wait "$pid" 2>/dev/null',
  'case "$REDIS_DIR" in */consumer-redis-*) rm -rf "$REDIS_DIR";; esac',
  'exit 0',
].join('\n');

export interface RedisServer {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The `process_id` that the server on `port` reports in INFO, or undefined. */
function serverPid(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port });
    let buffer = '';
    const done = (pid: number | undefined) => {
      socket.destroy();
      resolve(pid);
    };
    socket.setTimeout(500, () => done(undefined));
    socket.once('error', () => done(undefined));
    socket.once('connect', () => socket.write('INFO server\r\n'));
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1');
      if (buffer.startsWith('-')) return done(undefined); // e.g. LOADING
      const match = /\r\nprocess_id:(\d+)\r\n/.exec(buffer);
      if (match) done(Number(match[1]));
    });
  });
}

/** Running, and not a zombie (redis exits early, e.g. port taken, while the wrapper still waits on stdin). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const end = out.indexOf('\n');
      if (end >= 0) {
        child.stdout!.off('data', onData);
        resolve(out.slice(0, end).trim());
      }
    };
    child.stdout!.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis wrapper exited (${code}) before printing a PID`)));
  });
}

async function startOnce(binary: string): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'consumer-redis-'));
  const args = ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir, '--daemonize', 'no'];
  const child = spawn('sh', ['-c', WRAPPER, binary, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, REDIS_DIR: dir },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    child.stdin!.end();
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const pid = Number(await firstLine(child));
    if (!Number.isInteger(pid) || pid <= 0) throw new Error('redis wrapper printed no PID');
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      if ((await serverPid(port)) === pid) return { url: `redis://${HOST}:${port}`, port, pid, stop };
      if (!alive(pid)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    let log = '';
    try {
      log = readFileSync(path.join(dir, 'redis.log'), 'utf8');
    } catch {
      /* no log */
    }
    throw new Error(`${binary} did not start on ${HOST}:${port}\n${log.slice(-2000)}`);
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Starts redis-server on a free loopback port; retries a few times if the port was taken meanwhile. */
export async function startRedis(binary = process.env.REDLOCK_TEST_SERVER || 'redis-server'): Promise<RedisServer> {
  let last: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      return await startOnce(binary);
    } catch (error) {
      last = error;
      if (!/already in use|Address in use/i.test(String(error))) break;
    }
  }
  throw last;
}
