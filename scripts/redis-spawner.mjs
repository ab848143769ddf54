// Throwaway `redis-server` processes on free loopback ports: the one spawner of
// the test harness (test/support/redis-node.ts), the sample launchers, the
// benchmarks and the consumer apps (scripts/consumers.mjs copies this file into
// each app as test/redis-spawner.js, with redis-spawner.d.mts as its .d.ts).
//
// - Binary: env REDLOCK_TEST_SERVER (default `redis-server`), so valkey-server
//   or keydb-server can be substituted.
// - Listens on 127.0.0.1 at a free port chosen by us (kept across restarts).
// - Lifetime is tied to this process: redis-server is started by a tiny `sh`
//   wrapper whose stdin is a pipe from us. The wrapper prints the redis PID,
//   blocks on `read` of its stdin and, when stdin reaches EOF (we closed it, or
//   this process died for any reason, SIGKILL included), kills redis with -9,
//   provided the PID is still its own child (a recycled PID is never hit).
//   Unless we wrote `keep` before closing (our own kill()), the wrapper also
//   removes the node's tmp dir.
// - All signals go to the PID we were handed, never to a process name.
//
// Plain, self-contained JavaScript (node: built-ins only, no import.meta): it is
// imported as ESM by scripts, bench and jest, and compiled to CommonJS by the
// CommonJS consumer app's jest.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const HOST = '127.0.0.1';
export const DEFAULT_SERVER_BINARY = 'redis-server';
const POLL_MS = 10;
const PORT_RETRIES = 5;
const DIR_PREFIX = 'redlock-redis-';

/** Binary of the local nodes: env REDLOCK_TEST_SERVER (a name on PATH or a path), default `redis-server`. */
export function serverBinary(env = process.env) {
  return env.REDLOCK_TEST_SERVER || DEFAULT_SERVER_BINARY;
}

/**
 * `sh -c WRAPPER <binary> <args...>`: $0 is the binary, "$@" its args. Redis
 * output goes to $REDLOCK_NODE_LOG. If stdin closed without a `keep` line (our
 * process died), the node's tmp dir ($REDLOCK_NODE_DIR, always a mkdtemp
 * `redlock-redis-*` dir) is removed too.
 */
const WRAPPER = [
  'command -v "$0" >/dev/null 2>&1 || echo "$0: command not found (set REDLOCK_TEST_SERVER to a redis-server binary)" >>"$REDLOCK_NODE_LOG"',
  '"$0" "$@" >>"$REDLOCK_NODE_LOG" 2>&1 </dev/null &',
  'pid=$!',
  'echo "$pid"',
  'line=; read -r line || :',
  'if [ -r "/proc/$pid/stat" ]; then',
  '  st=$(cat "/proc/$pid/stat" 2>/dev/null); rest=${st##*) }; set -- $rest',
  '  [ "$2" = "$$" ] && kill -9 "$pid" 2>/dev/null',
  'elif [ ! -d /proc/self ]; then kill -9 "$pid" 2>/dev/null; fi',
  'wait "$pid" 2>/dev/null',
  `if [ "$line" != keep ]; then case "$REDLOCK_NODE_DIR" in */${DIR_PREFIX}*) rm -rf "$REDLOCK_NODE_DIR";; esac; fi`,
  'exit 0',
].join('\n');

// --- registry and exit hook (belt and braces besides the wrapper) ----------

const registry = new Set();
let exitHookInstalled = false;

function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', killAllSync);
}

/** Every RedisNode started in this process and not yet stopped. */
export function liveNodes() {
  return [...registry];
}

/** Synchronously SIGKILL every registered redis PID (the exit hook does this). */
export function killAllSync() {
  for (const node of registry) node.killSync();
}

// --- process helpers (Linux /proc where available) --------------------------

/** `{ state, ppid }`, or 'gone', or 'unknown' (no procfs, but the PID answers signal 0). */
function procState(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0], ppid: Number(rest[1]) };
  } catch {
    if (existsSync('/proc/self/stat')) return 'gone';
    try {
      process.kill(pid, 0);
      return 'unknown';
    } catch {
      return 'gone';
    }
  }
}

/** True while the PID exists and is not a zombie. */
export function pidAlive(pid) {
  const s = procState(pid);
  if (s === 'gone') return false;
  if (s === 'unknown') return true;
  return s.state !== 'Z' && s.state !== 'X';
}

const stopped = (s) => s === 'unknown' || s === 'gone' || s.state === 'T' || s.state === 't';
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(cond, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(POLL_MS);
  }
}

/** Ask the OS for a free TCP port on 127.0.0.1 (bind to 0, read, close). */
export function findFreePort() {
  return new Promise((resolve, reject) => {
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

/**
 * Who answers on `port`: the `process_id` its INFO reports, 'auth' for a server
 * that wants a password (up all the same, but it cannot say who it is), or
 * undefined (nothing listening yet, still loading its data, no answer within 250 ms).
 */
function whoAnswers(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port });
    let reply = '';
    const done = (who) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(who);
    };
    const timer = setTimeout(() => done(undefined), 250);
    // INFO answers while a restarted server still loads its data, when every other command
    // gets LOADING: the persistence section says whether it is done.
    socket.once('connect', () => socket.write('INFO server\r\nINFO persistence\r\n'));
    socket.once('error', () => done(undefined));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.startsWith('-')) return done(reply.startsWith('-NOAUTH') ? 'auth' : undefined);
      const [server, persistence] = bulks(reply, 2);
      if (persistence === undefined) return; // not all of it yet
      const id = /\r\nprocess_id:(\d+)\r\n/.exec(server);
      // A sentinel has no persistence section (an empty reply): nothing to load.
      done(id && !/\r\nloading:1\r\n/.test(`\r\n${persistence}`) ? Number(id[1]) : undefined);
    });
  });
}

/** The first `count` bulk strings of a RESP reply (latin1: one char per byte), fewer while incomplete. */
function bulks(reply, count) {
  const out = [];
  let at = 0;
  while (out.length < count) {
    const head = /^\$(-?\d+)\r\n/.exec(reply.slice(at));
    if (!head) break;
    const length = Math.max(0, Number(head[1]));
    const start = at + head[0].length;
    if (reply.length < start + length + 2) break;
    out.push(reply.slice(start, start + length));
    at = start + length + 2;
  }
  return out;
}

function tail(text, lines = 20) {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

class StartError extends Error {
  constructor(message, addrInUse) {
    super(message);
    this.addrInUse = addrInUse;
  }
}

// --- RedisNode -----------------------------------------------------------------

export class RedisNode {
  host = HOST;
  #port;
  /** The ports picked with `#port` for the server's other listeners (see RedisNodeOptions.extraPorts). */
  #extraPorts;
  #pid;
  #paused = false;
  #wrapper;
  #wrapperExit;
  #wrapperStderr = '';
  #baseDir;

  constructor(options = {}) {
    this.options = { ...options };
    this.#port = options.port;
  }

  get port() {
    if (this.#port === undefined) throw new Error('RedisNode has no port yet: call start() first');
    return this.#port;
  }
  get url() {
    return `redis://${this.host}:${this.port}`;
  }
  get extraPorts() {
    return this.#extraPorts ?? [];
  }
  get pid() {
    return this.#pid;
  }
  get running() {
    return this.#pid !== undefined;
  }
  get paused() {
    return this.#paused;
  }
  get dir() {
    return this.#baseDir;
  }
  get dataDir() {
    return this.#baseDir && path.join(this.#baseDir, 'data');
  }
  get logFile() {
    return this.#baseDir && path.join(this.#baseDir, 'redis.log');
  }
  get configFile() {
    return this.#baseDir && this.options.config !== undefined ? path.join(this.#baseDir, 'node.conf') : undefined;
  }

  async start() {
    if (this.running) throw new Error(`RedisNode already running on port ${this.#port}`);
    const fixedPort = this.#port !== undefined;
    const freshDir = this.#baseDir === undefined;
    for (let attempt = 1; ; attempt++) {
      const port = this.#port ?? (await findFreePort());
      // Picked again with the port: a free port can be taken (a client's ephemeral port) before the server binds it.
      if (!fixedPort || this.#extraPorts === undefined) {
        this.#extraPorts = await Promise.all(Array.from({ length: this.options.extraPorts ?? 0 }, () => findFreePort()));
      }
      try {
        await this.#startOnPort(port);
        this.#port = port;
        return;
      } catch (e) {
        if (e instanceof StartError && e.addrInUse && !fixedPort && attempt < PORT_RETRIES) continue;
        if (freshDir && this.#baseDir) {
          await rm(this.#baseDir, { recursive: true, force: true });
          this.#baseDir = undefined;
        }
        throw e;
      }
    }
  }

  async stop() {
    if (this.#paused && this.#pid !== undefined) this.#signal('SIGCONT');
    await this.kill();
    if (this.#baseDir) {
      const dir = this.#baseDir;
      this.#baseDir = undefined;
      await rm(dir, { recursive: true, force: true });
    }
    registry.delete(this);
  }

  async kill() {
    const pid = this.#pid;
    if (pid !== undefined) this.#signal('SIGKILL');
    await this.#closeWrapper();
    if (pid !== undefined) await waitFor(() => !pidAlive(pid), 5000, `redis pid ${pid} to exit`);
    this.#pid = undefined;
    this.#paused = false;
  }

  async pause() {
    const pid = this.#requirePid('pause');
    this.#signal('SIGSTOP');
    this.#paused = true;
    await waitFor(() => stopped(procState(pid)), 2000, `redis pid ${pid} to stop`);
  }

  async resume() {
    const pid = this.#requirePid('resume');
    this.#signal('SIGCONT');
    this.#paused = false;
    await waitFor(
      () => {
        const s = procState(pid);
        return s === 'gone' || !stopped(s);
      },
      2000,
      `redis pid ${pid} to continue`,
    );
  }

  async restart(opts = {}) {
    if (this.running) await this.kill();
    if (!opts.keepData && this.#baseDir) await rm(this.dataDir, { recursive: true, force: true });
    if (this.#port === undefined) return this.start();
    // Same port, no retry on another one: the caller relies on the address. The
    // port may linger briefly after a kill on some systems: retry shortly.
    const deadline = Date.now() + 2000;
    for (;;) {
      try {
        await this.#startOnPort(this.#port);
        return;
      } catch (e) {
        if (!(e instanceof StartError && e.addrInUse && Date.now() < deadline)) throw e;
        await sleep(50);
      }
    }
  }

  killSync() {
    const pid = this.#pid;
    if (pid === undefined) return;
    try {
      if (this.#isOurRedis(pid)) process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    try {
      this.#wrapper?.stdin?.destroy();
    } catch {
      /* ignore */
    }
    if (this.#baseDir) {
      try {
        rmSync(this.#baseDir, { recursive: true, force: true });
      } catch {
        /* ignore */
      }
    }
  }

  async readLog() {
    try {
      return this.logFile ? await readFile(this.logFile, 'utf8') : '';
    } catch {
      return '';
    }
  }

  async #startOnPort(port) {
    this.#baseDir ??= await mkdtemp(path.join(os.tmpdir(), DIR_PREFIX));
    await mkdir(this.dataDir, { recursive: true });
    // Written once: a Sentinel rewrites its file with what it learnt, which a restart keeps.
    if (this.options.config !== undefined && !existsSync(this.configFile)) await writeFile(this.configFile, this.options.config);
    await this.#launch(port);
  }

  #serverArgs(port) {
    const args = [
      // A config file must come first; the options after it override its lines.
      ...(this.configFile ? [this.configFile] : []),
      '--port',
      String(port),
      '--bind',
      HOST,
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.dataDir,
      '--protected-mode',
      'no',
    ];
    if (this.options.persistence) args.push('--appendonly', 'yes', '--appendfsync', 'always');
    const extra = typeof this.options.args === 'function' ? this.options.args(this.extraPorts) : this.options.args;
    if (extra) args.push(...extra);
    return args;
  }

  async #launch(port) {
    const binary = this.options.binary ?? serverBinary();
    const logFile = this.logFile;
    const logStart = existsSync(logFile) ? readFileSync(logFile).length : 0;
    this.#wrapperStderr = '';
    const child = spawn('/bin/sh', ['-c', WRAPPER, binary, ...this.#serverArgs(port)], {
      stdio: ['pipe', 'pipe', 'pipe'],
      // Own session: a terminal Ctrl-C hits this process (jest, the sample app),
      // not the wrapper; this process's death then closes the pipe.
      detached: true,
      env: { ...process.env, REDLOCK_NODE_LOG: logFile, REDLOCK_NODE_DIR: this.#baseDir },
    });
    this.#wrapper = child;
    this.#wrapperExit = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('close', () => resolve());
    });
    child.stdin.on('error', () => undefined); // EPIPE if the wrapper died: nothing to do
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d) => (this.#wrapperStderr = (this.#wrapperStderr + d).slice(-4000)));

    const fail = async (why) => {
      if (this.#pid !== undefined) this.#signal('SIGKILL');
      await this.#closeWrapper();
      this.#pid = undefined;
      this.#paused = false;
      let log = '';
      try {
        log = tail(readFileSync(logFile).subarray(logStart).toString('utf8'));
      } catch {
        /* no log */
      }
      throw new StartError(
        `${binary} on ${HOST}:${port} failed to start: ${why}` +
          `\n--- server output (tail) ---\n${log || '(empty)'}` +
          (this.#wrapperStderr ? `\n--- wrapper stderr ---\n${tail(this.#wrapperStderr)}` : ''),
        /address already in use|EADDRINUSE/i.test(log),
      );
    };

    // 1. The wrapper's first stdout line is the redis PID.
    let pid;
    try {
      pid = await firstLinePid(child);
    } catch (e) {
      return fail(e.message);
    }
    this.#pid = pid;
    this.#paused = false;
    registry.add(this);
    installExitHook();

    // 2. Readiness: the server on the port says it is our PID (another process
    // may have taken the port since we picked it; ours then exits, EADDRINUSE).
    const timeoutMs = this.options.startTimeoutMs ?? 5000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (!pidAlive(pid)) return fail(`process ${pid} exited before answering`);
      const who = await whoAnswers(port);
      if (who === pid || who === 'auth') break;
      if (Date.now() > deadline) return fail(`no answer within ${timeoutMs} ms`);
      await sleep(POLL_MS);
    }

    // Started: don't let the wrapper's handles keep the event loop alive. If
    // the caller forgets stop(), process exit closes the pipe and redis dies.
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) s?.unref?.();
  }

  /** Close the wrapper's stdin and wait for it to exit (it kills and reaps redis). */
  async #closeWrapper() {
    const child = this.#wrapper;
    const exited = this.#wrapperExit;
    this.#wrapper = undefined;
    this.#wrapperExit = undefined;
    if (!child) return;
    // `keep`: an intentional kill, the dir may be reused by restart({ keepData }).
    child.stdin?.end('keep\n');
    let timer;
    const timedOut = await Promise.race([exited.then(() => false), new Promise((r) => (timer = setTimeout(() => r(true), 3000)))]);
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

  #requirePid(op) {
    if (this.#pid === undefined) throw new Error(`cannot ${op}: RedisNode on port ${this.#port} is not running`);
    return this.#pid;
  }

  /** Whether pid is still the redis child of our wrapper (guards against PID reuse). */
  #isOurRedis(pid) {
    const s = procState(pid);
    if (s === 'gone') return false;
    if (s === 'unknown') return true;
    return this.#wrapper?.pid === undefined || s.ppid === this.#wrapper.pid;
  }

  #signal(sig) {
    const pid = this.#pid;
    if (pid === undefined || !this.#isOurRedis(pid)) return;
    try {
      process.kill(pid, sig);
    } catch (e) {
      if (e.code !== 'ESRCH') throw e;
    }
  }
}

/** The PID the wrapper prints on its first stdout line. */
function firstLinePid(child) {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('wrapper did not report a pid within 2000 ms')), 2000);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      const n = Number(out.slice(0, nl).trim());
      if (Number.isInteger(n) && n > 0) resolve(n);
      else reject(new Error(`wrapper printed an unexpected pid line: ${JSON.stringify(out)}`));
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
}

/** Starts one node; resolves once it answers. */
export async function startNode(options = {}) {
  const node = new RedisNode(options);
  await node.start();
  return node;
}

/** Starts `count` nodes in parallel: `{ nodes, urls, stop() }`. If one fails, the others are stopped and the error rethrown. */
export async function startNodes(count, options = {}) {
  const nodes = Array.from({ length: count }, () => new RedisNode(options));
  const stop = async () => void (await Promise.allSettled(nodes.map((node) => node.stop())));
  const failed = (await Promise.allSettled(nodes.map((node) => node.start()))).find((r) => r.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return { nodes, urls: nodes.map((node) => node.url), stop };
}
