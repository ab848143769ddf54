// `npm run sample`: runs the compiled sample app (dist-sample/sample/main.js).
//
// Nodes come from env REDLOCK_NODES (comma-separated redis URLs). Without it,
// three local redis-server processes are started here (binary from env
// REDLOCK_TEST_SERVER or `redis-server`) and stopped when the app exits; they
// cannot outlive this launcher (see scripts/sample-nodes.mjs).
// SIGINT/SIGTERM/SIGHUP are forwarded to the app, which shuts down gracefully.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startNodes } from './sample-nodes.mjs';

const MAIN = fileURLToPath(new URL('../dist-sample/sample/main.js', import.meta.url));
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const say = (message) => console.log(`[sample] ${message}`);

if (!existsSync(MAIN)) {
  console.error(`[sample] ${MAIN} is missing: compile first (npm run sample does)`);
  process.exit(1);
}

let nodes;
const env = { ...process.env };
if (process.env.REDLOCK_NODES) {
  say('using the nodes of REDLOCK_NODES');
} else {
  let stopping = false;
  const early = () => (stopping = true);
  for (const signal of SIGNALS) process.on(signal, early);
  try {
    nodes = await startNodes(3);
  } catch (error) {
    console.error(`[sample] could not start local redis nodes: ${error.message}`);
    process.exit(1);
  }
  for (const signal of SIGNALS) process.off(signal, early);
  say(
    `REDLOCK_NODES is not set: started 3 local redis-server nodes (${nodes.nodes
      .map((n) => `${n.url} pid ${n.pid}`)
      .join(', ')}); they stop when the app exits`,
  );
  if (stopping) {
    await nodes.stop();
    process.exit(0);
  }
  env.REDLOCK_NODES = nodes.urls.join(',');
}

// The IPC channel lets the app notice when this launcher goes away (see sample/main.ts).
const app = spawn(process.execPath, ['--enable-source-maps', MAIN], { env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
let stopRequested = false;
let forceTimer;

for (const signal of SIGNALS) {
  process.on(signal, () => {
    if (app.exitCode !== null || app.signalCode !== null) return;
    if (!stopRequested) say(`${signal}: stopping the app`);
    stopRequested = true;
    app.kill(signal); // by the child's PID; a second copy (terminal Ctrl-C reaches both) is harmless
    forceTimer ??= setTimeout(() => {
      say('the app did not stop within 10 s: killing it');
      app.kill('SIGKILL');
    }, 10_000);
  });
}

app.once('error', (error) => console.error(`[sample] could not start the app: ${error.message}`));
app.once('close', async (code, signal) => {
  clearTimeout(forceTimer);
  if (nodes) {
    await nodes.stop();
    say('local redis nodes stopped');
  }
  if (stopRequested) process.exit(0);
  say(`the app exited (${signal ?? `code ${code}`})`);
  process.exit(code ?? 1);
});
