// One fault-suite worker: a separate Node process that repeatedly takes the
// shared lock and, inside it, writes to the fenced store; every critical
// section is appended to its history file as a JSON line.
// argv: JSON config { id, nodes, storeUrl, resource, ttl, hold, durationMs, history, redlock }
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Redlock, RedisFencedStore } from '../../dist/esm/index.js';

const config = JSON.parse(process.argv[2]);
const now = () => performance.timeOrigin + performance.now();
const record = (entry) => appendFileSync(config.history, `${JSON.stringify({ w: config.id, ...entry })}\n`);

const redlock = new Redlock({ nodes: config.nodes, ...config.redlock });
const storeClient = new Redis(config.storeUrl);
const store = new RedisFencedStore(storeClient, 'faults:');
// The runner may hold a worker inside its critical section (to SIGSTOP it there).
let release;
process.on('message', (m) => m === 'go' && release?.());

const stopAt = now() + config.durationMs;
while (now() < stopAt) {
  const asked = now();
  let lock;
  try {
    lock = await redlock.acquire(config.resource, config.ttl, { acquireTimeout: 2000, retryCount: 100_000 });
  } catch (error) {
    record({ fail: error.code ?? String(error), asked, at: now(), detail: process.env.FAULTS_DEBUG ? JSON.stringify(error.attempts?.at(-1)) : undefined });
    await sleep(20);
    continue;
  }
  const start = now();
  void lock.signal; // watched from now on: it fires when the validity runs out
  if (config.askBeforeWrite) {
    process.send({ inside: config.id, token: lock.fencingToken });
    await new Promise((resolve) => (release = resolve));
  }
  let outcome = 'ok';
  let wrote;
  try {
    // A read-modify-write through the fenced store: both accesses carry the token.
    const seen = Number((await store.get('counter', lock.fencingToken)) ?? 0);
    await store.set('counter', String(seen + 1), lock.fencingToken);
    wrote = now();
  } catch (error) {
    outcome = error.code === 'STALE_TOKEN' ? 'stale' : `error:${error.message}`;
  }
  await sleep(config.hold);
  const end = now();
  record({ token: lock.fencingToken, asked, start, end, wrote, store: outcome, signalled: lock.signal.aborted });
  await lock.release().catch(() => undefined);
}
await redlock.close();
storeClient.disconnect();
process.exit(0);
