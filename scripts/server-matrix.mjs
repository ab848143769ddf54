// `npm run test:servers [-- name...]`: `npm test` and `npm run test:faults` on each
// Redis-protocol server, one after the other, then one summary line per run.
//
//   redis   the harness's default: REDLOCK_TEST_SERVER as set (else `redis-server` on
//           PATH, else containers), exactly what `npm test` alone runs on
//   valkey  valkey-server + valkey-cli from the servers directory
//   keydb   keydb-server + keydb-cli from the servers directory
//
// The servers directory is REDLOCK_SERVERS_BIN, default ../shared/bin beside the
// project (CI's machines have it). A server whose binary is not there is skipped with
// a printed line, not failed: a user's machine has no such directory. A binary that is
// there but does not start (`--version` fails) fails the matrix. Valkey and KeyDB runs
// set REDLOCK_TEST_CONTAINERS=0, so they never fall back to `redis:7` containers, and
// REDLOCK_TEST_CLI to the server's own CLI (the Redis Cluster test's `--cluster create`).
//
// Names given (`redis`, `valkey`, `keydb`) pick servers; `--no-faults` runs `npm test`
// only. Each run's output streams through; a run past RUN_TIMEOUT_MS is killed (its
// process group, by PID). Exits 1 if any run failed.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = path.resolve(ROOT, process.env.REDLOCK_SERVERS_BIN || '../shared/bin');
const RUN_TIMEOUT_MS = 15 * 60_000;
const SERVERS = ['redis', 'valkey', 'keydb'];

const args = process.argv.slice(2);
const faults = !args.includes('--no-faults');
const names = args.filter((a) => !a.startsWith('--'));
for (const name of names) {
  if (!SERVERS.includes(name)) {
    console.error(`[servers] unknown server ${JSON.stringify(name)}: expected one of ${SERVERS.join(', ')}`);
    process.exit(2);
  }
}
const picked = names.length ? SERVERS.filter((s) => names.includes(s)) : SERVERS;

const secs = (ms) => `${(ms / 1000).toFixed(0)} s`;
const log = (line) => console.log(`[servers] ${line}`);

function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `{ env, label }` for a server, `{ skip }` when its binary is absent, `{ fail }` when it does not run. */
function setup(name) {
  let env = {};
  let binary = process.env.REDLOCK_TEST_SERVER || 'redis-server';
  if (name !== 'redis') {
    binary = path.join(BIN, `${name}-server`);
    if (!executable(binary))
      return { skip: `${name}: skipped, ${binary} not found (REDLOCK_SERVERS_BIN: a directory with ${name}-server and ${name}-cli)` };
    env = { REDLOCK_TEST_SERVER: binary, REDLOCK_TEST_CONTAINERS: '0' };
    const cli = path.join(BIN, `${name}-cli`);
    if (executable(cli)) env.REDLOCK_TEST_CLI = cli;
  }
  const version = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (version.status !== 0) {
    if (name === 'redis') return { env, label: `${binary} (--version failed; the harness decides)` };
    return { fail: `${name}: ${binary} --version failed: ${(version.error?.message ?? version.stderr).trim()}` };
  }
  // "Redis server v=7.0.15 sha=...", "Valkey server v=8.0.1 ...", "KeyDB server v=6.3.4 ..."
  const m = /^(\S+) server v=(\S+)/.exec(version.stdout);
  return { env, label: m ? `${m[1]} ${m[2]}` : version.stdout.trim() };
}

let current;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (current) killGroup(current);
    process.exit(130);
  });
}
function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/** Runs `npm run <script>` with env added, output streamed and kept; resolves { code, summary, ms }. */
function runScript(script, env) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const childEnv = { ...process.env, ...env };
    // When started by `npm run`, do not hand this package's lifecycle variables to the nested npm.
    for (const key of Object.keys(childEnv)) if (/^npm_(package|lifecycle)_/.test(key)) delete childEnv[key];
    const child = spawn('npm', ['run', script], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    current = child;
    let out = '';
    child.stdout.on('data', (d) => ((out += d), process.stdout.write(d)));
    child.stderr.on('data', (d) => ((out += d), process.stderr.write(d)));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, RUN_TIMEOUT_MS);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      current = undefined;
      // eslint-disable-next-line no-control-regex
      const text = out.replace(/\x1b\[[0-9;]*m/g, '');
      const line = (label) => new RegExp(`^${label}:\\s+(.*)$`, 'm').exec(text)?.[1]?.trim();
      const tests = line('Tests');
      const summary = timedOut
        ? `killed after ${secs(RUN_TIMEOUT_MS)}`
        : tests
          ? `tests ${tests}; suites ${line('Test Suites')}`
          : `no jest summary (exit ${code ?? signal})`;
      resolve({ code: timedOut ? 1 : (code ?? 1), summary, ms: Date.now() - t0 });
    });
  });
}

const rows = [];
const skipped = [];
let failed = false;
const t0 = Date.now();
for (const name of picked) {
  const server = setup(name);
  if (server.skip) {
    log(server.skip);
    skipped.push(server.skip);
    continue;
  }
  if (server.fail) {
    log(server.fail);
    rows.push(server.fail);
    failed = true;
    continue;
  }
  for (const script of faults ? ['test', 'test:faults'] : ['test']) {
    const command = script === 'test' ? 'npm test' : `npm run ${script}`;
    log(`${server.label}: ${command}`);
    const result = await runScript(script, server.env);
    const verdict = result.code === 0 ? 'passed' : 'FAILED';
    if (result.code !== 0) failed = true;
    rows.push(`${server.label.padEnd(14)} ${command.padEnd(20)} ${verdict.padEnd(6)} ${result.summary} (${secs(result.ms)})`);
  }
}

console.log(`\n[servers] summary (${secs(Date.now() - t0)} in all):`);
for (const row of rows) console.log(`  ${row}`);
for (const line of skipped) console.log(`  ${line}`);
process.exit(failed ? 1 : 0);
