// One fault-suite worker: a separate Node process that repeatedly takes the
// shared lock (Redlock over the nodes it is given, from the BUILT library in
// dist/esm) and, inside it, does a read-modify-write of a counter through the
// fenced store with the lock's fencing token. Every critical section is one
// JSON line appended to this worker's own history file:
//   { w, who, token, asked, start, end, store, ... }
// Times are the host's monotonic clock in ms (`process.hrtime`), one clock for
// every process: `performance.timeOrigin` is not (see faults.spec.ts, `now`).
//
// argv[2]: JSON config { id, nodes, storeUrl, storePrefix, resource, ttl,
//   holdMin, holdMax, history, redlock, acquire, maxRunMs, store }
//   (acquire may carry `limit` or `mode`; store: false skips the fenced store, for permits)
//
// IPC from the runner:
//   { type: 'run' }   start the loop (sent once every worker is connected)
//   { type: 'arm' }   in the next critical section, between the fenced read and
//                     the fenced write, report { type: 'inside' } and wait for { type: 'go' }
//                     (the runner pauses this process, or restarts a node, meanwhile)
//   { type: 'disarm' } cancel 'arm' (and let a held section go on)
//   { type: 'stop' }  finish the current section, close, exit 0
// To the runner: { type: 'section', start } as each critical section begins (a
// schedule may wait for holders rather than for time), besides the messages above.
// The worker exits on its own after maxRunMs, or if the runner goes away.
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { FencedStore } from './fenced-store.mjs';

// The built library; FAULTS_LIBRARY may point at another build (an absolute path) to try a fix.
const { Redlock } = await import(process.env.FAULTS_LIBRARY ?? '../../dist/esm/index.js');

const config = JSON.parse(process.argv[2]);
const now = () => Number(process.hrtime.bigint()) / 1e6;
const record = (entry) => appendFileSync(config.history, `${JSON.stringify({ w: config.id, ...entry })}\n`);

// Bounded: never outlive the runner, never run forever.
process.on('disconnect', () => process.exit(1));
setTimeout(() => process.exit(3), config.maxRunMs ?? 60_000).unref();

const events = {};
let handedOver = false;
/** The section in progress and its lock's id: an extension moves its validUntil. */
let current;
const redlock = new Redlock({
  nodes: config.nodes,
  ...config.redlock,
  onEvent: (e) => {
    const name = e.type === 'acquire-failed' ? `acquire-failed:${e.code}` : e.type;
    events[name] = (events[name] ?? 0) + 1;
    if (e.type === 'extended' && current?.lockId === e.lockId) current.entry.validUntil = now() + e.validity;
    // Emitted before acquire() returns: the section about to start was handed over by a release.
    if (e.type === 'acquired') handedOver = e.handedOver;
    // Rare and telling: when this client noticed a node restart (restart guard on).
    if (e.type === 'node-restarted') record({ event: e.type, node: e.node, excludedFor: e.excludedFor, at: now() });
  },
});
const storeClient = new Redis(config.storeUrl, { maxRetriesPerRequest: 1 });
const store = new FencedStore(storeClient, config.storePrefix);

let started;
const running = new Promise((resolve) => (started = resolve));
let stopping = false;
let armed = false;
let go;
process.on('message', (m) => {
  if (m.type === 'run') started();
  if (m.type === 'arm') armed = true;
  if (m.type === 'stop') stopping = true;
  if (m.type === 'disarm') armed = false;
  if (m.type === 'go' || m.type === 'stop' || m.type === 'disarm') go?.();
});

await Promise.race([redlock.ready(), sleep(5000)]);
process.send({ type: 'ready' });
await running;

let n = 0;
while (!stopping) {
  const asked = now();
  let lock;
  try {
    lock = await redlock.acquire(config.resource, config.ttl, { autoExtend: true, ...config.acquire });
  } catch (error) {
    // The last attempt's answer from each node, e.g. 'ok', 'busy', 'timeout', 'error:Connection is closed.'.
    const nodes = error.attempts?.at(-1)?.nodes?.map((r) => (r.error ? `${r.outcome}:${r.error.slice(0, 60)}` : r.outcome));
    record({ fail: error.code ?? String(error), asked, at: now(), attempts: error.attempts?.length, nodes });
    await sleep(20);
    continue;
  }
  const start = now();
  process.send({ type: 'section', start });
  const who = `${config.id}.${++n}`;
  const token = lock.fencingToken;
  // validUntil: when the library says this lock stops being exclusive; moved by each extension.
  const entry = { who, token, asked, start, validUntil: start + lock.validity, attempts: lock.attempts, handedOver };
  current = { lockId: lock.id, entry };
  void lock.signal; // watched from now on: it fires when the validity runs out
  if (config.acquire?.mode) entry.mode = config.acquire.mode;
  // The runner keeps an armed section here (between the fenced read and the write,
  // or at its start for a permit): it pauses this process (SIGSTOP), or restarts a
  // lock node, meanwhile.
  const holdIfArmed = async () => {
    if (!armed) return;
    armed = false;
    const waiting = new Promise((resolve) => (go = resolve));
    process.send({ type: 'inside', token, validity: lock.validity, at: now() });
    await waiting;
    // Awake again: what the lock says right now, before the write that was about to go out.
    entry.held = { wokeAt: now(), heldOnWake: lock.isHeld, validityOnWake: lock.validity, abortedOnWake: lock.signal.aborted };
  };
  try {
    // Permits are shared: a fenced read-modify-write is for exclusive holders only.
    if (config.store === false) {
      await holdIfArmed();
      throw Object.assign(new Error('no store'), { code: 'NO_STORE' });
    }
    // Read-modify-write, both accesses fenced (the read checks and records the token too).
    const read = await store.get('counter', token, who);
    await holdIfArmed();
    const wrote = await store.set('counter', Number(read.value ?? 0) + 1, token, who);
    entry.store = 'ok';
    entry.seq = wrote.seq;
  } catch (error) {
    entry.store = error.code === 'STALE_TOKEN' ? 'stale' : error.code === 'NO_STORE' ? 'none' : `error:${error.message}`;
  }
  if (entry.held) {
    // Checked after the pause (and after the write went out): the signal must have fired.
    entry.held.abortedAfterWrite = lock.signal.aborted;
    entry.held.reason = lock.signal.reason?.message;
    const line =
      `worker ${config.id} (pid ${process.pid}) woke inside its critical section: isHeld=${entry.held.heldOnWake}, ` +
      `signal ${entry.held.abortedAfterWrite ? 'FIRED' : 'not fired'} (aborted at wake: ${entry.held.abortedOnWake}` +
      `${entry.held.reason ? `; ${entry.held.reason}` : ''}), its write: ${entry.store}`;
    if (process.env.FAULTS_VERBOSE) process.stdout.write(`[faults] ${line}\n`);
    process.send({ type: 'woke', line, ...entry.held, store: entry.store });
  }
  const span = config.holdMax - config.holdMin;
  await sleep(config.holdMin + Math.floor(Math.random() * (span + 1)));
  entry.end = now();
  // Still valid at the end of the section? If not, this worker overran its lock (a
  // stalled or starved process): a later holder may legitimately overlap it.
  entry.heldAtEnd = lock.isHeld;
  entry.extensions = lock.extensions;
  record(entry);
  await lock.release().catch(() => undefined);
}
// Diagnostics only (internals, may be absent): nodes this client still treats as hung
// at the end, every fault healed and nothing sent for 300 ms (a backlog would have drained).
await sleep(300);
const stalled = (redlock.nodes ?? []).flatMap((node, i) => (node.isStalled(200) ? [i] : []));
record({ summary: { sections: n, events, stalled } });
await Promise.race([redlock.close(), sleep(2000)]);
storeClient.disconnect();
process.send({ type: 'done', events, stalled }, () => process.exit(0));
