// Local redis-server nodes for the sample launchers (scripts/sample.mjs, scripts/sample-cluster.mjs).
//
// Each node is `sh -c WRAPPER <binary> --port P --bind 127.0.0.1 --save "" --appendonly no`.
// The wrapper starts redis in the background, prints its PID, then blocks reading
// its stdin, a pipe from this process. When that pipe closes (we call stop(), or
// this process exits or is killed, SIGKILL included) the wrapper kills redis,
// provided the PID is still its own child, so nothing outlives the launcher and
// no other process is ever hit. Wrappers run in their own session, so a Ctrl-C in
// the terminal reaches the app (which then releases its locks) and not the nodes.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

const HOST = '127.0.0.1';
const START_TIMEOUT = 5000;

const WRAPPER = [
  'command -v "$0" >/dev/null 2>&1 || { echo "$0: command not found (set REDLOCK_TEST_SERVER to a redis-server binary)"; exit 127; }',
  '"$0" "$@" </dev/null 2>&1 &',
  'pid=$!',
  'echo "pid $pid"',
  'read -r _ || :',
  'if [ -r "/proc/$pid/stat" ]; then',
  '  st=$(cat "/proc/$pid/stat" 2>/dev/null); rest=${st##*) }; set -- $rest',
  '  [ "$2" = "$$" ] && kill -9 "$pid" 2>/dev/null',
  'elif [ ! -d /proc/self ]; then kill -9 "$pid" 2>/dev/null; fi',
  'wait "$pid" 2>/dev/null',
  'exit 0',
].join('\n');

/** Nodes started by this process and not stopped yet. */
const live = new Set();

process.on('exit', () => {
  // Belt and braces: the wrappers see their stdin close when we exit anyway.
  for (const node of live) node.killSync();
});

export function serverBinary() {
  return process.env.REDLOCK_TEST_SERVER || 'redis-server';
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** True when the server at `port` answers PING within `timeout` ms. */
function ping(port, timeout = 250) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port });
    let reply = '';
    const done = (ok) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeout);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk;
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
    socket.once('error', () => done(false));
  });
}

/** The parent PID of `pid`, or undefined when it is gone or there is no /proc. */
function parentOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

class LocalNode {
  constructor(binary, port) {
    this.binary = binary;
    this.port = port;
    this.url = `redis://${HOST}:${port}`;
    this.pid = undefined; // redis-server's PID, as printed by the wrapper
    this.output = []; // last lines of the wrapper's and redis' output, for errors
    this.exited = false;
  }

  async start() {
    const args = ['--port', String(this.port), '--bind', HOST, '--save', '', '--appendonly', 'no'];
    this.wrapper = spawn('sh', ['-c', WRAPPER, this.binary, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true, // own session: terminal signals go to the app, not to the nodes
    });
    this.exit = new Promise((resolve) => this.wrapper.once('exit', resolve)).then(() => {
      this.exited = true;
      live.delete(this);
    });
    this.wrapper.once('error', (error) => this.output.push(`sh: ${error.message}`));
    this.wrapper.stdin.on('error', () => undefined); // EPIPE once the wrapper is gone
    live.add(this);
    const collect = (chunk) => {
      for (const line of String(chunk).split('\n')) {
        if (!line.trim()) continue;
        const pid = /^pid (\d+)$/.exec(line);
        if (pid && this.pid === undefined) this.pid = Number(pid[1]);
        else this.output = [...this.output.slice(-19), line];
      }
    };
    this.wrapper.stdout.on('data', collect);
    this.wrapper.stderr.on('data', collect);

    const deadline = Date.now() + START_TIMEOUT;
    while (!(this.pid !== undefined && (await ping(this.port)))) {
      if (this.exited || Date.now() > deadline) {
        await this.stop();
        const why = this.exited ? 'exited' : `did not answer PING within ${START_TIMEOUT} ms`;
        throw Object.assign(new Error(`${this.binary} on port ${this.port} ${why}:\n  ${this.output.join('\n  ')}`), {
          addressInUse: this.output.some((line) => /address already in use/i.test(line)),
        });
      }
      await sleep(20);
    }
  }

  /** Closes the wrapper's stdin (it kills redis and exits); SIGKILL by PID if it hangs. */
  async stop() {
    if (!this.wrapper || this.exited) return;
    this.wrapper.stdin.end();
    const stopped = await Promise.race([this.exit.then(() => true), sleep(3000).then(() => false)]);
    if (!stopped) {
      this.killSync();
      await this.exit;
    }
  }

  /** Synchronous SIGKILL of redis (only while it is still our wrapper's child) and of the wrapper. */
  killSync() {
    if (!this.wrapper || this.exited) return;
    if (this.pid !== undefined && parentOf(this.pid) === this.wrapper.pid) {
      try {
        process.kill(this.pid, 'SIGKILL');
      } catch {}
    }
    try {
      process.kill(this.wrapper.pid, 'SIGKILL');
    } catch {}
  }
}

/**
 * Starts `count` redis-server processes on free loopback ports.
 * Returns `{ nodes, urls, stop() }`; `stop()` ends every one of them.
 */
export async function startNodes(count = 3) {
  const binary = serverBinary();
  const nodes = [];
  const stop = () => Promise.all(nodes.map((node) => node.stop()));
  try {
    for (let i = 0; i < count; i++) {
      for (let attempt = 1; ; attempt++) {
        const node = new LocalNode(binary, await freePort());
        try {
          await node.start();
          nodes.push(node);
          break;
        } catch (error) {
          if (!error.addressInUse || attempt >= 5) throw error; // port taken since we picked it: pick another
        }
      }
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes, urls: nodes.map((node) => node.url), stop };
}
