// `npm run test:sample` (CI): runs `npm run sample` as a newcomer would, twice,
//
//   memory: with no redis-server on PATH (PATH is a directory of symlinks to
//           everything on the real PATH but the server), so the sample must
//           fall back to its in-memory nodes;
//   redis:  with redis-server on PATH, so it must start three local nodes;
//
// and checks in each that the sample says which nodes it chose, that the locked
// endpoint answers (POST /orders/<id>/pay: 200 with a fencing token, 409 for a
// concurrent second payment), that the lock events are logged, that the cron
// job runs, and that SIGINT to npm's PID stops everything (exit code 0, no app
// or redis-server process left). Every wait is for a line of the sample's
// output or an HTTP answer; the deadlines only bound a failure.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { findOnPath, serverBinary } from './redis-server.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const START_TIMEOUT = 180_000; // compile (tsc) and boot, on a loaded 2-core machine
const CRON_TIMEOUT = 30_000; // the job runs every 5 s
const STEP_TIMEOUT = 20_000;
// eslint-disable-next-line no-control-regex -- ANSI colour codes in the app's output
const ANSI = /\x1b\[[0-9;]*m/g;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A directory with a symlink to every command on PATH except `hidden`, to stand in for PATH. */
function pathWithout(hidden) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'redlock-sample-path-'));
  const seen = new Set(hidden);
  for (const from of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    let names;
    try {
      names = readdirSync(from);
    } catch {
      continue;
    }
    for (const name of names) {
      if (seen.has(name)) continue;
      seen.add(name);
      symlinkSync(path.join(from, name), path.join(dir, name));
    }
  }
  return dir;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `npm run sample` in its own process group, its output as lines, waited on by pattern. */
class SampleRun {
  constructor(name, env) {
    this.lines = [];
    this.waiters = new Set(); // { line(text), exited() }
    this.child = spawn('npm', ['run', 'sample'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.exit = new Promise((resolve) => {
      this.child.once('error', (error) => resolve({ code: error.message }));
      this.child.once('close', (code, signal) => resolve({ code, signal }));
    });
    this.exit.then(() => {
      for (const waiter of this.waiters) waiter.exited();
    });
    const onLine = (line) => {
      line = line.replace(ANSI, '');
      this.lines.push(line);
      console.log(`${name} | ${line}`);
      for (const waiter of this.waiters) waiter.line(line);
    };
    createInterface({ input: this.child.stdout }).on('line', onLine);
    createInterface({ input: this.child.stderr }).on('line', onLine);
  }

  /** The match of the first line (seen or to come) matching `pattern`. */
  line(pattern, timeout, what) {
    const seen = this.lines.map((l) => pattern.exec(l)).find(Boolean);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`no ${what} within ${timeout / 1000} s`)), timeout);
      const done = (error, match) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        if (error) reject(error);
        else resolve(match);
      };
      const waiter = {
        line: (text) => {
          const match = pattern.exec(text);
          if (match) done(undefined, match);
        },
        exited: () => done(new Error(`npm run sample exited before the ${what}`)),
      };
      this.waiters.add(waiter);
    });
  }

  /** After a failure: the whole process group, by its id. */
  killGroup() {
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

async function pay(port, id) {
  const response = await fetch(`http://127.0.0.1:${port}/orders/${id}/pay`, {
    method: 'POST',
    signal: AbortSignal.timeout(STEP_TIMEOUT),
  });
  return { status: response.status, body: await response.json() };
}

async function check(name, env, expected) {
  const port = await freePort();
  const run = new SampleRun(name, { ...env, PORT: String(port), NO_COLOR: '1' });
  const say = (message) => console.log(`${name} | [check] ${message}`);
  try {
    const choice = await run.line(/^\[sample\] nodes: (.*)$/, START_TIMEOUT, 'line saying which nodes it chose');
    if (!expected.test(choice[1])) throw new Error(`it chose "${choice[1]}", expected ${expected}`);
    const redisPids = [...choice[1].matchAll(/ pid (\d+)/g)].map((m) => Number(m[1]));
    const [, appPid] = await run.line(
      /\[Sample\] Instance \S+ \(pid (\d+)\) listening on http:\/\/localhost:(\d+)/,
      START_TIMEOUT,
      'listening line',
    );
    say(`listening; app pid ${appPid}${redisPids.length ? `, redis-server pids ${redisPids.join(' ')}` : ''}`);

    // The locked endpoint: the second payment is sent once the first holds the lock.
    const id = `check-${process.pid}`;
    const first = pay(port, id);
    await run.line(new RegExp(`\\[LockEvents\\] acquired order:${id} `), STEP_TIMEOUT, 'acquired event of the payment');
    const second = pay(port, id);
    const answers = await Promise.all([first, second]);
    const ok = answers.find((a) => a.status === 200);
    const refused = answers.find((a) => a.status === 409);
    if (!ok || !refused || !Number.isSafeInteger(ok.body.fencingToken) || ok.body.status !== 'paid') {
      throw new Error(`POST /orders/${id}/pay answered ${JSON.stringify(answers)}: expected 200 (paid, fencing token) and 409`);
    }
    say(`POST /orders/${id}/pay: 200 paid, fencingToken ${ok.body.fencingToken}; concurrent one: 409 "${refused.body.message}"`);
    await run.line(new RegExp(`\\[LockEvents\\] released order:${id} `), STEP_TIMEOUT, 'released event of the payment');

    const [, tick, token] = await run.line(/\[ReportJob\] report run tick=(\S+) .* fencingToken=(\d+)/, CRON_TIMEOUT, 'cron job run');
    await run.line(/\[LockEvents\] released report:every-5s /, STEP_TIMEOUT, 'release of the cron job lock');
    say(`cron job ran at tick ${tick} with fencing token ${token}`);

    process.kill(run.child.pid, 'SIGINT'); // npm's PID, as a user's kill -INT would
    const exit = await Promise.race([run.exit, new Promise((resolve) => setTimeout(resolve, STEP_TIMEOUT, { code: 'timeout' }))]);
    if (exit.code !== 0) throw new Error(`after SIGINT npm run sample ended with ${exit.signal ?? exit.code}, expected code 0`);
    const left = [Number(appPid), ...redisPids].filter(alive);
    if (left.length) throw new Error(`after SIGINT these processes are still running: ${left.join(' ')}`);
    say('SIGINT to npm: stopped with code 0, app' + (redisPids.length ? ' and redis-server processes' : '') + ' gone');
  } catch (error) {
    run.killGroup();
    throw new Error(`${name}: ${error.message}`, { cause: error });
  }
}

const binary = serverBinary();
if (!findOnPath(binary)) {
  console.error(`[check] ${binary} is not on PATH: the real-server half of this check needs it`);
  process.exit(1);
}
const base = { ...process.env };
delete base.REDLOCK_NODES;
const hidden = pathWithout(['redis-server', path.basename(binary)]);
try {
  const memoryEnv = { ...base, PATH: hidden };
  delete memoryEnv.REDLOCK_TEST_SERVER;
  await check('memory', memoryEnv, /^3 in-memory nodes inside the app \(nest-redlock\/testing\), because redis-server is not on PATH/);
  await check('redis', base, /^3 local \S+ processes/);
  console.log('[check] the sample ran, answered and stopped on in-memory nodes and on local redis-server nodes');
} catch (error) {
  console.error(`[check] FAILED ${error.message}`);
  process.exitCode = 1;
} finally {
  rmSync(hidden, { recursive: true, force: true });
}
