// `npm run sample`: compiles the sample app (sample/ and lib/ into dist-sample/)
// and runs it, on the first of these that applies, and says which:
//
//   1. REDLOCK_NODES: comma-separated redis URLs (or `memory`), used as given;
//   2. the redis-server binary (env REDLOCK_TEST_SERVER, default `redis-server`)
//      on PATH: three local processes started here and stopped when the app
//      exits; they cannot outlive this launcher (see scripts/redis-spawner.mjs);
//   3. otherwise three in-memory nodes inside the app (REDLOCK_NODES=memory: the
//      testing module's, with the lock semantics of the Redis scripts).
//
// SIGINT/SIGTERM/SIGHUP stop the app gracefully (held locks released). The npm
// script `exec`s this file, so npm's own forwarding of SIGINT/SIGTERM reaches it:
// with `sh -c 'node ...'` Debian's dash would keep the signal to itself.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { findOnPath, installHint, serverBinary } from './redis-server.mjs';
import { startNodes } from './redis-spawner.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MAIN = fileURLToPath(new URL('../dist-sample/sample/main.js', import.meta.url));
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const say = (message) => console.log(`[sample] ${message}`);

// What a stop signal does depends on the phase; the first one is remembered.
let stopSignal;
let onStop = () => undefined;
for (const signal of SIGNALS) {
  process.on(signal, () => {
    stopSignal ??= signal;
    onStop(signal);
  });
}

await compile();
if (stopSignal) process.exit(0);

let nodes;
const env = { ...process.env };
const binary = serverBinary();
const binaryName = process.env.REDLOCK_TEST_SERVER ? `${binary} (REDLOCK_TEST_SERVER)` : binary;
if (process.env.REDLOCK_NODES?.trim() === 'memory') {
  say('nodes: 3 in-memory nodes inside the app (REDLOCK_NODES=memory)');
} else if (process.env.REDLOCK_NODES) {
  say(`nodes: REDLOCK_NODES (${process.env.REDLOCK_NODES.split(',').filter((url) => url.trim()).length} given)`);
} else if (findOnPath(binary)) {
  try {
    nodes = await startNodes(3); // a stop signal meanwhile is acted on below, once they are up
  } catch (error) {
    console.error(`[sample] could not start local redis nodes: ${error.message}`);
    process.exit(1);
  }
  say(
    `nodes: 3 local ${binary} processes (${nodes.nodes.map((n) => `${n.url} pid ${n.pid}`).join(', ')}), ` +
      'stopped when the app exits. Other servers: REDLOCK_NODES=redis://host:port,...; in-memory nodes: REDLOCK_NODES=memory',
  );
  if (stopSignal) {
    await nodes.stop();
    process.exit(0);
  }
  env.REDLOCK_NODES = nodes.urls.join(',');
} else {
  say(`nodes: 3 in-memory nodes inside the app (nest-redlock/testing), because ${binaryName} is not on PATH.`);
  say('  Locks, ttls, fencing tokens and events behave as on Redis, but the nodes live in this one process: no other process shares them.');
  say(`  For real servers: ${installHint()} and run \`npm run sample\` again, or set REDLOCK_NODES=redis://host:6379,...`);
  env.REDLOCK_NODES = 'memory';
}

// The IPC channel lets the app notice when this launcher goes away (see sample/main.ts).
const app = spawn(process.execPath, ['--enable-source-maps', MAIN], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
let forceTimer;
onStop = (signal) => {
  if (app.exitCode !== null || app.signalCode !== null) return;
  if (!forceTimer) say(`${signal}: stopping the app`);
  app.kill(signal); // by the child's PID; a second copy (terminal Ctrl-C reaches both) is harmless
  forceTimer ??= setTimeout(() => {
    say('the app did not stop within 10 s: killing it');
    app.kill('SIGKILL');
  }, 10_000);
};
if (stopSignal) onStop(stopSignal);

app.once('error', (error) => console.error(`[sample] could not start the app: ${error.message}`));
app.once('close', async (code, signal) => {
  clearTimeout(forceTimer);
  if (nodes) {
    await nodes.stop();
    say('local redis nodes stopped');
  }
  if (stopSignal) process.exit(0);
  say(`the app exited (${signal ?? `code ${code}`})`);
  process.exit(code ?? 1);
});

/** `rm -rf dist-sample && tsc -p sample/tsconfig.json`, stoppable by a signal to this process. */
function compile() {
  rmSync(new URL('../dist-sample', import.meta.url), { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const child = spawn(process.execPath, [tsc, '-p', 'sample/tsconfig.json'], { cwd: ROOT, stdio: 'inherit' });
  onStop = (signal) => child.kill(signal);
  return new Promise((resolve) => {
    child.once('error', (error) => {
      console.error(`[sample] could not compile the sample: ${error.message}`);
      process.exit(1);
    });
    child.once('close', (code) => {
      onStop = () => undefined;
      if (code !== 0 && !stopSignal) {
        console.error(`[sample] tsc -p sample/tsconfig.json failed (${code})`);
        process.exit(1);
      }
      resolve();
    });
  });
}
