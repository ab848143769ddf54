/**
 * One real `redis-server` process for integration / fault tests.
 *
 * - Binary: env REDLOCK_TEST_SERVER (default `redis-server`), so valkey-server
 *   or keydb-server can be substituted.
 * - Listens on 127.0.0.1 at a free port chosen by us (kept across restarts).
 * - Lifetime is tied to this process: redis-server is started by a tiny
 *   `sh` wrapper whose stdin is a pipe from us. The wrapper prints the redis
 *   PID, blocks on `read` of its stdin and, when stdin reaches EOF (we closed
 *   it, or this process died for any reason, SIGKILL included), kills redis
 *   with -9. A killed jest therefore leaves no redis-server behind. Unless we
 *   wrote `keep` before closing (our own kill()/stop()), the wrapper also
 *   removes the node's tmp dir.
 * - All signals go to the PID we were handed, never to a process name.
 * - No ioredis here: the harness talks raw RESP over node:net (./resp.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, existsSync } from 'node:fs';
import { mkdtemp, rm, mkdir, readFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { RespError, rawCommand } from './resp.js';

export interface RedisNodeOptions {
  /** Extra redis-server arguments, appended last (so they override defaults). */
  args?: string[];
  /** Adds `--appendonly yes --appendfsync always` so kill -9 loses nothing acknowledged. */
  persistence?: boolean;
  /** Server binary; default env REDLOCK_TEST_SERVER or `redis-server`. */
  binary?: string;
  /** Fixed port instead of a free one picked by us. */
  port?: number;
  /** Readiness timeout in ms (default 5000). */
  startTimeoutMs?: number;
}

export interface RestartOptions {
  /** Keep the data dir (AOF/RDB) across the restart. Default false: the dir is wiped. */
  keepData?: boolean;
}

/** What both the local-process node and the (optional) container node offer. */
export interface TestRedisNode {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  /** PID of the redis-server process; undefined when not running (or in a container). */
  readonly pid: number | undefined;
  readonly running: boolean;
  readonly paused: boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
  kill(): Promise<void>;
  pause(): Promise<void>;
  resume(): Promise<void>;
  restart(opts?: RestartOptions): Promise<void>;
}

export const DEFAULT_SERVER_BINARY = 'redis-server';
export function serverBinary(): string {
  return process.env.REDLOCK_TEST_SERVER || DEFAULT_SERVER_BINARY;
}

const HOST = '127.0.0.1';
const POLL_MS = 10;
const PORT_RETRIES = 5;

/**
 * `sh -c WRAPPER <binary> <args...>`: $0 is the binary, "$@" its args.
 * Redis output goes to $REDLOCK_NODE_LOG. After stdin EOF, redis is killed only
 * if its PID is still our child (ppid == $$), so a recycled PID is never hit.
 * If stdin closed without a `keep` line (our process died), the node's tmp dir
 * ($REDLOCK_NODE_DIR, always a mkdtemp `redlock-redis-*` dir) is removed too.
 */
const WRAPPER = [
  '"$0" "$@" >>"$REDLOCK_NODE_LOG" 2>&1 </dev/null &',
  'pid=$!',
  'echo "$pid"',
  'line=; read -r line || :',
  'if [ -r "/proc/$pid/stat" ]; then',
  '  st=$(cat "/proc/$pid/stat" 2>/dev/null); rest=${st##*) }; set -- $rest',
  '  [ "$2" = "$$" ] && kill -9 "$pid" 2>/dev/null',
  'elif [ ! -d /proc/self ]; then kill -9 "$pid" 2>/dev/null; fi',
  'wait "$pid" 2>/dev/null',
  'if [ "$line" != keep ]; then case "$REDLOCK_NODE_DIR" in */redlock-redis-*) rm -rf "$REDLOCK_NODE_DIR";; esac; fi',
  'exit 0',
].join('\n');

// ---------------------------------------------------------------------------
// Registry + exit hook (belt and braces besides the wrapper)
// ---------------------------------------------------------------------------

const registry = new Set<RedisNode>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const node of registry) node.killSync();
  });
}

/** Every RedisNode started in this process and not yet stopped. */
export function liveNodes(): RedisNode[] {
  return [...registry];
}

/** Synchronously SIGKILL every registered redis pid (used by the exit hook). */
export function killAllSync(): void {
  for (const node of registry) node.killSync();
}

// ---------------------------------------------------------------------------
// Small process helpers (Linux /proc where available)
// ---------------------------------------------------------------------------

type ProcState = { state: string; ppid: number } | 'gone' | 'unknown';

function procState(pid: number): ProcState {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0]!, ppid: Number(rest[1]) };
  } catch {
    if (!existsSync('/proc/self/stat')) {
      // No procfs: fall back to a signal-0 probe.
      try {
        process.kill(pid, 0);
        return 'unknown';
      } catch {
        return 'gone';
      }
    }
    return 'gone';
  }
}

/** True while the PID exists and is not a zombie. */
export function pidAlive(pid: number): boolean {
  const s = procState(pid);
  if (s === 'gone') return false;
  if (s === 'unknown') return true;
  return s.state !== 'Z' && s.state !== 'X';
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(POLL_MS);
  }
}

/** Ask the OS for a free TCP port on 127.0.0.1 (bind to 0, read, close). */
export function findFreePort(): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('could not determine a free port'))));
    });
  });
}

class StartError extends Error {
  constructor(
    message: string,
    readonly addrInUse: boolean,
  ) {
    super(message);
  }
}

function tail(text: string, lines = 20): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

// ---------------------------------------------------------------------------
// RedisNode
// ---------------------------------------------------------------------------

export class RedisNode implements TestRedisNode {
  readonly host = HOST;
  readonly options: Readonly<RedisNodeOptions>;

  private _port: number | undefined;
  private _pid: number | undefined;
  private _paused = false;
  private wrapper: ChildProcess | undefined;
  private wrapperExit: Promise<void> | undefined;
  private wrapperStderr = '';
  private baseDir: string | undefined;

  constructor(options: RedisNodeOptions = {}) {
    this.options = { ...options };
    this._port = options.port;
  }

  get port(): number {
    if (this._port === undefined) throw new Error('RedisNode has no port yet: call start() first');
    return this._port;
  }
  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }
  get pid(): number | undefined {
    return this._pid;
  }
  get running(): boolean {
    return this._pid !== undefined;
  }
  get paused(): boolean {
    return this._paused;
  }
  /** Directory holding `data/` (redis --dir) and `redis.log`. */
  get dir(): string | undefined {
    return this.baseDir;
  }
  get dataDir(): string | undefined {
    return this.baseDir && path.join(this.baseDir, 'data');
  }
  get logFile(): string | undefined {
    return this.baseDir && path.join(this.baseDir, 'redis.log');
  }

  /** Start the server. Picks a free port on first start; retries on EADDRINUSE. */
  async start(): Promise<void> {
    if (this.running) throw new Error(`RedisNode already running on port ${this._port}`);
    const fixedPort = this._port !== undefined;
    const freshDir = this.baseDir === undefined;
    for (let attempt = 1; ; attempt++) {
      const port = this._port ?? (await findFreePort());
      try {
        await this.startOnPort(port);
        this._port = port;
        return;
      } catch (e) {
        if (e instanceof StartError && e.addrInUse && !fixedPort && attempt < PORT_RETRIES) continue;
        if (freshDir && this.baseDir) {
          await rm(this.baseDir, { recursive: true, force: true });
          this.baseDir = undefined;
        }
        throw e;
      }
    }
  }

  /** SIGKILL the server (resuming it first if paused), wait for exit, remove its tmp dir. */
  async stop(): Promise<void> {
    if (this._paused && this._pid !== undefined) this.signal('SIGCONT');
    await this.kill();
    if (this.baseDir) {
      const dir = this.baseDir;
      this.baseDir = undefined;
      await rm(dir, { recursive: true, force: true });
    }
    registry.delete(this);
  }

  /** kill -9 the server and wait until it is gone. Data is lost unless `persistence`. */
  async kill(): Promise<void> {
    const pid = this._pid;
    if (pid !== undefined) this.signal('SIGKILL');
    await this.closeWrapper();
    if (pid !== undefined) await waitFor(() => !pidAlive(pid), 5000, `redis pid ${pid} to exit`);
    this._pid = undefined;
    this._paused = false;
  }

  /** SIGSTOP: the port still accepts connections (kernel backlog) but nothing is answered. */
  async pause(): Promise<void> {
    const pid = this.requirePid('pause');
    this.signal('SIGSTOP');
    this._paused = true;
    await waitFor(
      () => {
        const s = procState(pid);
        return s === 'unknown' || s === 'gone' || s.state === 'T' || s.state === 't';
      },
      2000,
      `redis pid ${pid} to stop`,
    );
  }

  /** SIGCONT a paused server. */
  async resume(): Promise<void> {
    const pid = this.requirePid('resume');
    this.signal('SIGCONT');
    this._paused = false;
    await waitFor(
      () => {
        const s = procState(pid);
        return s === 'unknown' || s === 'gone' || (s.state !== 'T' && s.state !== 't');
      },
      2000,
      `redis pid ${pid} to continue`,
    );
  }

  /**
   * Kill (if running) and start again on the SAME port. With keepData false
   * (default) the data dir is wiped first; with true, AOF/RDB are reloaded.
   */
  async restart(opts: RestartOptions = {}): Promise<void> {
    if (this.running) await this.kill();
    if (!opts.keepData && this.baseDir) {
      await rm(this.dataDir!, { recursive: true, force: true });
    }
    if (this._port === undefined) return this.start();
    // Same port, no EADDRINUSE retry on another port: the caller relies on the address.
    const deadline = Date.now() + 2000;
    for (;;) {
      try {
        await this.startOnPort(this._port);
        return;
      } catch (e) {
        // The port may linger briefly after a kill on some systems; retry shortly.
        if (e instanceof StartError && e.addrInUse && Date.now() < deadline) {
          await sleep(50);
          continue;
        }
        throw e;
      }
    }
  }

  /** Synchronous SIGKILL of the redis pid (for process 'exit' hooks). Never throws. */
  killSync(): void {
    const pid = this._pid;
    if (pid === undefined) return;
    try {
      if (this.isOurRedis(pid)) process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    try {
      this.wrapper?.stdin?.destroy();
    } catch {
      /* ignore */
    }
    if (this.baseDir) {
      try {
        rmSync(this.baseDir, { recursive: true, force: true });
      } catch {
        /* ignore */
      }
    }
  }

  /** Redis log so far (for diagnostics). */
  async readLog(): Promise<string> {
    const f = this.logFile;
    if (!f) return '';
    try {
      return await readFile(f, 'utf8');
    } catch {
      return '';
    }
  }

  // -------------------------------------------------------------------------

  private async startOnPort(port: number): Promise<void> {
    if (!this.baseDir) this.baseDir = await mkdtemp(path.join(os.tmpdir(), 'redlock-redis-'));
    await mkdir(this.dataDir!, { recursive: true });
    await this.launch(port);
  }

  private serverArgs(port: number): string[] {
    const args = [
      '--port',
      String(port),
      '--bind',
      HOST,
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.dataDir!,
      '--protected-mode',
      'no',
    ];
    if (this.options.persistence) args.push('--appendonly', 'yes', '--appendfsync', 'always');
    if (this.options.args) args.push(...this.options.args);
    return args;
  }

  private async launch(port: number): Promise<void> {
    const binary = this.options.binary ?? serverBinary();
    const logFile = this.logFile!;
    const logStart = existsSync(logFile) ? readFileSync(logFile).length : 0;
    this.wrapperStderr = '';

    const child = spawn('/bin/sh', ['-c', WRAPPER, binary, ...this.serverArgs(port)], {
      stdio: ['pipe', 'pipe', 'pipe'],
      // Own session: a terminal Ctrl-C hits jest, not the wrapper; jest's
      // death then closes the pipe and the wrapper cleans up.
      detached: true,
      env: { ...process.env, REDLOCK_NODE_LOG: logFile, REDLOCK_NODE_DIR: this.baseDir! },
    });
    this.wrapper = child;
    this.wrapperExit = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('close', () => resolve());
    });
    child.stdin!.on('error', () => {
      /* EPIPE if the wrapper died: nothing to do */
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (d: string) => {
      this.wrapperStderr = (this.wrapperStderr + d).slice(-4000);
    });

    const readLogTail = (): string => {
      try {
        return tail(readFileSync(logFile).subarray(logStart).toString('utf8'));
      } catch {
        return '';
      }
    };
    const fail = async (why: string): Promise<never> => {
      const pid = this._pid;
      if (pid !== undefined) this.signal('SIGKILL');
      await this.closeWrapper();
      this._pid = undefined;
      this._paused = false;
      const log = readLogTail();
      const addrInUse = /address already in use|EADDRINUSE/i.test(log);
      throw new StartError(
        `${binary} on ${HOST}:${port} failed to start: ${why}` +
          `\n--- server output (tail) ---\n${log || '(empty)'}` +
          (this.wrapperStderr ? `\n--- wrapper stderr ---\n${tail(this.wrapperStderr)}` : ''),
        addrInUse,
      );
    };

    // 1. The wrapper's first stdout line is the redis PID.
    let pid: number;
    try {
      pid = await new Promise<number>((resolve, reject) => {
        let out = '';
        const timer = setTimeout(() => reject(new Error('wrapper did not report a pid within 2000 ms')), 2000);
        child.stdout!.setEncoding('utf8');
        child.stdout!.on('data', (d: string) => {
          out += d;
          const nl = out.indexOf('\n');
          if (nl >= 0) {
            clearTimeout(timer);
            const n = Number(out.slice(0, nl).trim());
            if (Number.isInteger(n) && n > 0) resolve(n);
            else reject(new Error(`wrapper printed an unexpected pid line: ${JSON.stringify(out)}`));
          }
        });
        child.once('error', (e) => {
          clearTimeout(timer);
          reject(e);
        });
        child.once('exit', (code, sig) => {
          clearTimeout(timer);
          reject(new Error(`wrapper exited early (code ${code}, signal ${sig})`));
        });
      });
    } catch (e) {
      return fail((e as Error).message);
    }
    this._pid = pid;
    this._paused = false;
    registry.add(this);
    installExitHook();

    // 2. Readiness: raw TCP PING until +PONG.
    const timeoutMs = this.options.startTimeoutMs ?? 5000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!pidAlive(pid)) return fail(`process ${pid} exited before answering PING`);
      try {
        const reply = await rawCommand(port, ['PING'], { host: HOST, timeoutMs: 250 });
        // A node started with --requirepass answers NOAUTH: it is up all the same.
        if (reply === 'PONG' || (reply instanceof RespError && reply.message.startsWith('NOAUTH'))) break;
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) return fail(`no +PONG within ${timeoutMs} ms`);
      await sleep(POLL_MS);
    }

    // Started: don't let the wrapper's handles keep the event loop alive. If
    // a test forgets stop(), process exit closes the pipe and redis dies.
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) {
      (s as unknown as { unref?: () => void } | null)?.unref?.();
    }
  }

  /** Close the wrapper's stdin and wait for it to exit (it kills + reaps redis). */
  private async closeWrapper(): Promise<void> {
    const child = this.wrapper;
    const exited = this.wrapperExit;
    this.wrapper = undefined;
    this.wrapperExit = undefined;
    if (!child) return;
    // `keep`: an intentional kill, the dir may be reused by restart({ keepData }).
    child.stdin?.end('keep\n');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      exited!.then(() => false),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(true), 3000);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut && child.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    child.stdout?.destroy();
    child.stderr?.destroy();
  }

  private requirePid(op: string): number {
    if (this._pid === undefined) throw new Error(`cannot ${op}: RedisNode on port ${this._port} is not running`);
    return this._pid;
  }

  /** Whether pid is still the redis child of our wrapper (guards against PID reuse). */
  private isOurRedis(pid: number): boolean {
    const s = procState(pid);
    if (s === 'gone') return false;
    if (s === 'unknown') return true;
    return this.wrapper?.pid === undefined || s.ppid === this.wrapper.pid;
  }

  private signal(sig: NodeJS.Signals): void {
    const pid = this._pid;
    if (pid === undefined || !this.isOurRedis(pid)) return;
    try {
      process.kill(pid, sig);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
    }
  }
}
