// One adapter per library, all over ioredis. Each entry is
//   { waits, create(urls, { wait }) -> { ready(), acquire(key, ttl) -> handle, release(handle), close(),
//                                        attempts?(handle) (attempts the acquisition took, where the library tells) } }
// `wait: false` (every scenario but contention): one attempt, no retry.
// `wait: true` (single-key contention): the library keeps retrying with its own
// delays until it gets the lock; `waits` says with which settings.
//
// The ioredis clients the bench creates for the peers and the raw round get the
// settings nest-redlock applies to the connections it opens itself: no offline
// queue (a command to a node that is down fails at once instead of waiting for a
// reconnection) and one retry per request. Every library then sees a dead or hung
// node the same way, and differences come from the libraries, not from ioredis.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { corked } from '../corked.mjs';

/** The semaphore scenario's limit: what a semaphore adapter uses unless told. */
export const SEMAPHORE_PERMITS = 4;

/**
 * Where run.mjs put its snapshot of the built library (dist/esm), so a rebuild
 * during a run cannot break it; read when used, since run.mjs sets it after
 * importing this file.
 */
const nestRedlockBuild = () => process.env.BENCH_NEST_REDLOCK ?? new URL('../../dist/esm/core/index.js', import.meta.url).href;

/**
 * The ioredis copies in play, as files. The peers and the raw round use the
 * bench's own (bench/node_modules, which this file resolves). The library's
 * build resolves its `ioredis` import from where the build sits: run.mjs's
 * snapshot lives under bench/.cache, so it finds the bench's copy too; dist/esm
 * in place finds the root's. `same` is the copy the build resolves, `other` the
 * other one; clients passed in are made from one of them (see `clientSetups`).
 */
export function ioredisCopies() {
  const bench = createRequire(import.meta.url).resolve('ioredis');
  const root = createRequire(new URL('../../package.json', import.meta.url)).resolve('ioredis');
  const library = createRequire(new URL(nestRedlockBuild())).resolve('ioredis');
  return { bench, root, library, same: library, other: library === bench ? root : bench };
}

/** The `Redis` class of the ioredis copy at `file` (a resolved path). */
function redisOf(file) {
  const module = createRequire(import.meta.url)(file);
  return module.Redis ?? module;
}

async function clientsFor(urls, RedisClass = Redis) {
  const clients = urls.map((url) => {
    const client = new RedisClass(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
    client.on('error', () => undefined); // a node down is part of the scenario
    return client;
  });
  await Promise.all(clients.map((c) => (c.status === 'ready' ? undefined : once(c, 'ready'))));
  return clients;
}
const closeAll = (clients) => Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));

/** Resolves true when `quorum` replies satisfy `ok`, false as soon as that is impossible; never rejects. */
function atQuorum(replies, quorum, ok) {
  return new Promise((resolve) => {
    let yes = 0;
    let no = 0;
    const n = replies.length;
    for (const r of replies) {
      r.then(
        (reply) => (ok(reply) ? ++yes === quorum && resolve(true) : ++no === n - quorum + 1 && resolve(false)),
        () => ++no === n - quorum + 1 && resolve(false),
      );
    }
  });
}

/** node-redlock v5's API, also that of its fork `@sesamecare-oss/redlock`: `acquire([key], ttl)`, `lock.release()`. */
async function redlockV5Api(Redlock, urls, { wait }) {
  const clients = await clientsFor(urls);
  // retryCount -1 = retry forever, with the default retryDelay 200 ms ± retryJitter 100 ms.
  const redlock = new Redlock(clients, wait ? { retryCount: -1 } : { retryCount: 0 });
  redlock.on('error', () => undefined);
  return {
    ready: async () => undefined,
    acquire: (key, ttl) => redlock.acquire([key], ttl),
    release: (lock) => lock.release(),
    attempts: (lock) => lock.attempts.length,
    close: () => closeAll(clients),
  };
}

/**
 * nest-redlock with `extra` options. `clients`: 'urls' (it opens its own
 * connections from the URLs, with its own settings), or 'same' / 'other'
 * (ioredis clients made here, with the peers' settings, from the copy its build
 * resolves or from the other copy; see `ioredisCopies`), left open by its close().
 */
function nestRedlock(extra, clients = 'urls', build = nestRedlockBuild) {
  // `nodeTimeout`: only cycle-cpu.mjs sets one, so that a loaded machine cannot turn its cycles into failures.
  return async (urls, { wait, nodeTimeout }) => {
    const { Redlock } = await import(build());
    const copies = ioredisCopies();
    const passed = clients === 'urls' ? undefined : await clientsFor(urls, redisOf(copies[clients]));
    // The setup is what its name says: a client of the build's own ioredis class, or not.
    if (passed && passed[0] instanceof redisOf(copies.library) !== (clients === 'same')) {
      await closeAll(passed);
      throw new Error(`clients of the ${clients} ioredis copy are${clients === 'same' ? ' not' : ''} the build's own class`);
    }
    // retryCount 1 000 000 is the highest accepted; retryDelay/retryJitter stay at their defaults.
    const redlock = new Redlock({ nodes: passed ?? urls, retryCount: wait ? 1_000_000 : 0, ...(nodeTimeout && { nodeTimeout }), ...extra });
    return {
      ready: () => redlock.ready(),
      acquire: (key, ttl) => redlock.acquire(key, ttl),
      release: (lock) => lock.release(),
      attempts: (lock) => lock.attempts,
      close: async () => {
        await redlock.close();
        if (passed) await closeAll(passed);
      },
    };
  };
}

/**
 * nest-redlock over clients the application made with another library
 * (`open(urls)`, `close(clients)`): node-redis, iovalkey, Valkey GLIDE.
 */
function nestRedlockOver(open, close, extra = {}) {
  return async (urls, { wait, nodeTimeout }) => {
    const { Redlock } = await import(nestRedlockBuild());
    const clients = await open(urls);
    const redlock = new Redlock({ nodes: clients, retryCount: wait ? 1_000_000 : 0, ...(nodeTimeout && { nodeTimeout }), ...extra });
    return {
      ready: () => redlock.ready(),
      acquire: (key, ttl) => redlock.acquire(key, ttl),
      release: (lock) => lock.release(),
      attempts: (lock) => lock.attempts,
      close: async () => {
        await redlock.close();
        await close(clients);
      },
    };
  };
}

/** nest-redlock's semaphore of `permits` (default: the scenario's 4): its own connections from the URLs, default waiting. */
function nestRedlockSemaphore(extra = {}, build = nestRedlockBuild) {
  return async (urls, { wait, permits = SEMAPHORE_PERMITS }) => {
    const { Redlock } = await import(build());
    const redlock = new Redlock({ nodes: urls, retryCount: wait ? 1_000_000 : 0, ...extra });
    return {
      ready: () => redlock.ready(),
      acquire: (key, ttl) => redlock.acquire(key, ttl, { limit: permits }),
      release: (permit) => permit.release(),
      attempts: (permit) => permit.attempts,
      close: () => redlock.close(),
    };
  };
}

/** The client setups the speed scenarios run nest-redlock with, besides its own connections from URLs. */
export const clientSetups = {
  same: "ioredis clients passed in, of the copy its build resolves (the peers' copy)",
  other: 'ioredis clients passed in, of another ioredis copy',
};
const passedIn = (setup) => (setup === 'same' ? 'clients passed in, same ioredis copy' : 'clients passed in, other ioredis copy');

/** GLIDE's `Batch` class, set once the package is loaded (see `tickBatch`). */
let GlideBatch;
/** One Valkey GLIDE `GlideClient` per node, as an application makes them. */
async function glideClients(urls) {
  const { GlideClient, Logger, Batch } = await import('@valkey/valkey-glide');
  GlideBatch = Batch;
  Logger.setLoggerConfig('error'); // GLIDE logs every NOSCRIPT and reconnect at WARN
  return Promise.all(
    urls.map((url) => {
      const { hostname, port } = new URL(url);
      // requestTimeout: GLIDE's 250 ms default would fail commands before the lock's own node timeout.
      return GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port || 6379) }], requestTimeout: 2000 });
    }),
  );
}
const closeGlide = async (clients) => clients.forEach((c) => c.close());

/**
 * `args` sent in this tick's pipeline to GLIDE client `c` (one non-atomic Batch per
 * client and tick, a lone command as it is): resolves with its reply.
 */
const glideTicks = new WeakMap();
function tickBatch(c, args) {
  let queued = glideTicks.get(c);
  if (!queued) {
    glideTicks.set(c, (queued = []));
    process.nextTick(() => {
      glideTicks.delete(c);
      if (queued.length === 1) return queued[0].resolve(c.customCommand(queued[0].args));
      const batch = new GlideBatch(false);
      for (const q of queued) batch.customCommand(q.args);
      c.exec(batch, false).then(
        (replies) => queued.forEach((q, i) => (replies[i] instanceof Error ? q.reject(replies[i]) : q.resolve(replies[i]))),
        (error) => queued.forEach((q) => q.reject(error)),
      );
    });
  }
  return new Promise((resolve, reject) => queued.push({ args, resolve, reject }));
}

/**
 * The raw round over clients of one library: `open(urls)` makes them, `close(clients)`
 * closes them, and `commands` sends SET NX PX, EVALSHA and SCRIPT LOAD through them.
 * With `floor` (ioredis clients only), the acquire and the release are that floor's
 * scripts instead (see FLOORS).
 */
function rawRound(open, close, commands, floor) {
  return async (urls, { wait }) => {
    const clients = await open(urls);
    const quorum = Math.floor(urls.length / 2) + 1;
    const lua = floor?.release ?? `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
    let shas;
    let acquireShas;
    const del = (key, value) =>
      atQuorum(
        clients.map((c, i) => (floor ? c.evalsha(shas[i], 2, key, `queue:${key}`, value) : commands.evalsha(c, shas[i], key, value))),
        quorum,
        () => true,
      );
    // The fencing floor, as nest-redlock sends it: the acquiring client's clock in µs.
    const set = floor?.send
      ? (c, i, key, value, ttl) => floor.send(c, key, value, ttl, Date.now() * 1000, FENCE_RETENTION)
      : floor
        ? (c, i, key, value, ttl) =>
            c.evalsha(acquireShas[i], 3, key, `fence:${key}`, `queue:${key}`, value, ttl, Date.now() * 1000, FENCE_RETENTION)
        : (c, i, key, value, ttl) => commands.set(c, key, value, ttl);
    return {
      ready: async () => {
        shas = await Promise.all(clients.map((c) => commands.load(c, lua)));
        if (floor?.acquire) acquireShas = await Promise.all(clients.map((c) => commands.load(c, floor.acquire)));
      },
      async acquire(key, ttl) {
        for (let attempts = 1; ; attempts++) {
          const value = randomBytes(20).toString('base64url');
          if (
            await atQuorum(
              clients.map((c, i) => set(c, i, key, value, ttl)),
              quorum,
              (r) => r === 'OK' || r > 0,
            )
          )
            return { key, value, attempts };
          await del(key, value);
          if (!wait) throw new Error('busy');
          await sleep(200 + Math.random() * 100);
        }
      },
      release: async ({ key, value }) => {
        if (!(await del(key, value))) throw new Error('release not confirmed by a quorum');
      },
      attempts: (handle) => handle.attempts,
      close: () => close(clients),
    };
  };
}

/** nest-redlock's default fencing retention (7 days), ms. */
const FENCE_RETENTION = 7 * 24 * 3600 * 1000;

/**
 * What the wire costs a lock with nest-redlock's features, uncontended, with no
 * library around it: the least each feature needs on a node, in one script per
 * node and call (KEYS: lock, fence counter, queue; ARGV: value, ttl, fencing
 * floor, retention). No command without a script raises a counter to at least
 * a floor together with a SET NX (ZADD GT comes closest, in a MULTI: five
 * commands per node), so a fenced lock starts from a script.
 * - `script`: SET NX PX inside a script, nothing else: what running any script costs.
 * - `fencing`: that, and the counter raised to the floor (SET .. GET), one more
 *   write only when the counter was already at or above it.
 * - `fencing and fair waiting`: that, and a free key given up when a waiter is queued
 *   (one ZRANGE); the release peeks at the queue too, as a hand-over must.
 */
const TAKE = `if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end`;
// A free key given up to a queued waiter.
const YIELD = `if redis.call('ZRANGE', KEYS[3], 0, 0)[1] then
  redis.call('DEL', KEYS[1])
  return 0
end`;
// The counter raised to the floor (or one above itself), its value the token.
const FENCE = `local floor = tonumber(ARGV[3])
local c = tonumber(redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4], 'GET') or '0')
if c >= floor then
  redis.call('SET', KEYS[2], string.format('%.0f', c + 1), 'PX', ARGV[4])
  return c + 1
end
return floor`;
// The fair floors' release: compare-and-delete, and a peek at the queue, as a hand-over must.
const FAIR_RELEASE = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if redis.call('ZRANGE', KEYS[2], 0, 0)[1] then return 2 end
return 1`;
const FLOORS = {
  // Fencing and fair waiting with no script to acquire: SET NX PX, the queue's existence
  // (a free key with waiters queued is theirs), and the counter (made at the floor if
  // missing, then raised by one), in one write per node. The release is the script's.
  'fencing and fair waiting without an acquire script': {
    send: (c, key, value, ttl, floor, retention) =>
      corked(c, () => {
        const replies = [
          c.set(key, value, 'PX', ttl, 'NX'),
          c.exists(`queue:${key}`),
          c.set(`fence:${key}`, floor, 'PX', retention, 'NX'),
          c.incr(`fence:${key}`),
        ];
        return Promise.all(replies).then(([taken, queued, , token]) => (taken === 'OK' && queued === 0 ? token : 0));
      }),
    release: FAIR_RELEASE,
  },
  script: { acquire: `${TAKE}\nreturn 1` },
  fencing: { acquire: `${TAKE}\n${FENCE}` },
  'fencing and fair waiting': {
    acquire: `${TAKE}\n${YIELD}\n${FENCE}`,
    release: FAIR_RELEASE,
  },
};

// The fair floor's scripts (see rawFair). An attempt: SET NX PX, or the waiter's entry
// pushed on the key's list of waiters (KEYS: key, its list; ARGV: value, ttl, channel).
const FAIR_HAND_ON = `
local function handOn(key, waiters)
  redis.call('DEL', key)
  local e = redis.call('LPOP', waiters)
  if e then
    local channel, ttl, value = string.match(e, '^(%S+) (%S+) (.*)$')
    redis.call('SET', key, value, 'PX', ttl)
    redis.call('PUBLISH', channel, value)
  end
end`;
const FAIR_ACQUIRE = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
redis.call('RPUSH', KEYS[2], ARGV[3] .. ' ' .. ARGV[2] .. ' ' .. ARGV[1])
return 0`;
// The release, and the undo of an attempt: out of line (ARGV[2], its entry, where a node
// has not handed it the lock yet: a release may reach a slow node before the hand-over
// to it), and the key handed on where it holds it. 1 when either was there.
const FAIR_LEAVE = `${FAIR_HAND_ON}
local left = redis.call('LREM', KEYS[2], 0, ARGV[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then
  handOn(KEYS[1], KEYS[2])
  return 1
end
return math.min(left, 1)`;
export const FAIR_FLOOR = { acquire: FAIR_ACQUIRE, leave: FAIR_LEAVE };

/**
 * The fair floors' clients, and their votes: a waiter counts its own attempt's yes
 * answers and the hand-overs published to it on `channel` ('<value>', or '<value>
 * <token>' from a fenced floor: the highest token is kept), and holds at `quorum`.
 * Hand-overs of one release come within moments of each other; a waiter handed over on
 * fewer nodes than a quorum (nodes put waiters in different orders) starts again after 20 ms.
 */
async function fairFloorSetup(urls, quorum, name) {
  const clients = await clientsFor(urls);
  const subscribers = await clientsFor(urls);
  const channel = `${name}:${randomBytes(8).toString('hex')}`;
  const waiting = new Map(); // value -> { votes, token, resolve }
  const vote = (value, token = 0) => {
    const w = waiting.get(value);
    if (!w) return;
    if (Number(token) > w.token) w.token = Number(token);
    if (++w.votes === quorum) {
      waiting.delete(value);
      w.resolve(true);
    } else if (w.votes === 1) setTimeout(() => w.resolve(false), 20);
  };
  for (const s of subscribers) s.on('message', (_, message) => vote(...message.split(' ')));
  await Promise.all(subscribers.map((s) => s.subscribe(channel)));
  return { clients, subscribers, channel, waiting, vote };
}

/**
 * The votes a permit of a semaphore of `limit` needs on `nodes` nodes, as this library's
 * permitQuorumOf (lib/core/quorum.ts): the smallest q with (limit + 1) * q > limit * nodes,
 * so that no node can be left with limit + 1 holders each granted by q nodes.
 */
const limitQuorum = (nodes, limit) => Math.max(Math.floor(nodes / 2) + 1, nodes - Math.ceil(nodes / (limit + 1)) + 1);

/**
 * The floor of a fair lock: the least a quorum lock that serves its waiters in
 * order does. An attempt is SET NX PX on every node, or, refused, the waiter's
 * entry pushed on the node's list of waiters; a release deletes the key where it
 * holds this value and sets it to the first waiter's value there, publishing
 * that value on the waiter's channel. A waiter holds the lock once a quorum of
 * nodes set its value (its own SETs and the hand-overs, counted together). An
 * attempt that took the key on some nodes but not a quorum (several processes
 * at once on a free key, or hand-overs from nodes that put waiters in different
 * orders) is undone, handing on what it took, and tried again after a short
 * random delay; otherwise no validity, no crashed waiters: only
 * the contention scenario's processes, which never give up. What it shows: how
 * fast any lock goes that hands the lock from one process to the next, against
 * the libraries whose releasing process takes the lock again.
 */
function rawFair() {
  return async (urls) => {
    const quorum = Math.floor(urls.length / 2) + 1;
    const { clients, subscribers, channel, waiting, vote } = await fairFloorSetup(urls, quorum, 'fair-floor');
    let shas;
    const run = (which, key, ...argv) => clients.map((c, i) => c.evalsha(shas[i][which], 2, key, `${key}:waiters`, ...argv));
    const leave = ({ key, value, ttl }) => run(1, key, value, `${channel} ${ttl} ${value}`);
    return {
      ready: async () =>
        (shas = await Promise.all(clients.map((c) => Promise.all([FAIR_ACQUIRE, FAIR_LEAVE].map((lua) => c.script('LOAD', lua)))))),
      async acquire(key, ttl) {
        for (;;) {
          const value = randomBytes(20).toString('base64url');
          let split;
          const held = new Promise((resolve) => ((split = resolve), waiting.set(value, { votes: 0, token: 0, resolve })));
          const replies = run(0, key, value, ttl, channel).map((r) => r.then((r) => (r === 1 && vote(value), r)));
          Promise.all(replies).then(
            (r) => r.includes(1) && split(false),
            () => split(false),
          );
          if (await held) return { key, value, ttl };
          waiting.delete(value);
          await Promise.all(leave({ key, value, ttl }));
          await sleep(Math.random() * 5);
        }
      },
      async release(handle) {
        if (!(await atQuorum(leave(handle), quorum, (r) => r === 1))) throw new Error('release not confirmed by a quorum');
      },
      close: () => closeAll([...clients, ...subscribers]),
    };
  };
}

// The fair semaphore floor's scripts (see rawFairSemaphore). KEYS: the holders (a set),
// the waiters (a sorted set by when each began waiting); ARGV: value, limit, then for an
// attempt the waiter's entry ('<channel> <value>') and when it began waiting.
const FAIR_PERMIT_HAND_ON = `
local function handOn(holders, waiters, limit)
  while redis.call('SCARD', holders) < limit do
    local e = redis.call('ZPOPMIN', waiters)[1]
    if not e then return end
    local channel, value = string.match(e, '^(%S+) (.*)$')
    redis.call('SADD', holders, value)
    redis.call('PUBLISH', channel, value)
  end
end`;
// An attempt: admitted when no one waits and a permit is free, else queued at its place.
const FAIR_PERMIT_ACQUIRE = `if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
if redis.call('ZCARD', KEYS[2]) == 0 and redis.call('SCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('SADD', KEYS[1], ARGV[1])
  return 1
end
redis.call('ZADD', KEYS[2], 'NX', ARGV[4], ARGV[3])
return 0`;
// The release, and the undo of an attempt: out of line, the permit given back, and the
// permits free handed on in queue order. 1 when either was there.
const FAIR_PERMIT_LEAVE = `${FAIR_PERMIT_HAND_ON}
local left = redis.call('ZREM', KEYS[2], ARGV[3])
if redis.call('SREM', KEYS[1], ARGV[1]) == 1 then
  handOn(KEYS[1], KEYS[2], tonumber(ARGV[2]))
  return 1
end
return left`;

/**
 * The floor of a fair quorum semaphore, as rawFair is a fair lock's: the least a
 * semaphore does that serves its waiters in order and keeps to its limit. An
 * attempt adds the caller's value to the holders on every node where no one waits
 * and a permit is free, and queues it elsewhere, ordered by when the call began
 * waiting (the same on every node). A release removes its value and hands each
 * free permit to the first waiter, publishing the value on the waiter's channel.
 * A permit is held once the quorum its limit needs (all 5 nodes for a limit of 4,
 * as this library's permits: see permitQuorumOf) added its value, its own
 * attempt's and the hand-overs counted together. Short of that 20 ms after the
 * first, the attempt is undone and tried again at its place. No validity, no
 * expiry, no fencing, no crashed waiters: only the semaphore scenario's processes.
 */
function rawFairSemaphore() {
  return async (urls, { permits = SEMAPHORE_PERMITS } = {}) => {
    const quorum = limitQuorum(urls.length, permits);
    const { clients, subscribers, channel, waiting, vote } = await fairFloorSetup(urls, quorum, 'fair-permit-floor');
    let shas;
    const run = (which, key, value, ...argv) =>
      clients.map((c, i) => c.evalsha(shas[i][which], 2, key, `${key}:waiters`, value, permits, `${channel} ${value}`, ...argv));
    return {
      ready: async () =>
        (shas = await Promise.all(
          clients.map((c) => Promise.all([FAIR_PERMIT_ACQUIRE, FAIR_PERMIT_LEAVE].map((lua) => c.script('LOAD', lua)))),
        )),
      async acquire(key) {
        const since = Date.now();
        for (;;) {
          // A value of its own per attempt, as rawFair's: a hand-over of an undone attempt, read
          // late, is no vote for the next one. Its place is `since`, whatever the value.
          const value = randomBytes(20).toString('base64url');
          const held = new Promise((resolve) => waiting.set(value, { votes: 0, token: 0, resolve }));
          for (const reply of run(0, key, value, since))
            reply.then(
              (r) => r === 1 && vote(value),
              () => undefined,
            );
          if (await held) return { key, value };
          waiting.delete(value);
          await Promise.all(run(1, key, value));
          await sleep(Math.random() * 5);
        }
      },
      async release({ key, value }) {
        if (!(await atQuorum(run(1, key, value), quorum, (r) => r === 1))) throw new Error('release not confirmed by a quorum');
      },
      close: () => closeAll([...clients, ...subscribers]),
    };
  };
}

// The scripts of the fair semaphore floor with expiry and fencing (see rawFencedSemaphore).
// KEYS: the holders (a sorted set: value -> when its permit expires), the waiters (a
// sorted set of entries '<channel> <id>' by when each began waiting), the waiters' data
// (a hash: entry -> '<until> <ttl> <floor> <value>'), the fence counter.
const FENCED_PERMIT_HELPERS = `
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A key lives at least ms more (the holders' set as long as its longest permit), never
-- less; set to twice that when short, so that it is set about once per ms, as this
-- library's atLeast (lib/core/permit-scripts.ts).
local function keep(key, ms)
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, 2 * ms) end
end
-- The counter above its last token and at least the caller's clock in microseconds (a
-- node that restarted empty cannot give an older token again), kept for retention ms.
local function token(fence, floor, retention)
  local c = tonumber(redis.call('SET', fence, floor, 'PX', retention, 'GET') or '')
  if not c or c < tonumber(floor) then return floor end
  local t = string.format('%.0f', c + 1)
  redis.call('SET', fence, t, 'PX', retention)
  return t
end
local function free(holders, now, limit)
  redis.call('ZREMRANGEBYSCORE', holders, '-inf', '(' .. now)
  return limit - redis.call('ZCARD', holders)
end
`;
// An attempt. ARGV: entry, value, limit, since, ttl, entry ttl, floor, retention. Admitted
// when a permit is free for it: fewer fresh waiters ahead of it than free permits (stale
// ones, of waiters that crashed, are dropped on the way); else queued, or its entry
// renewed, at its place. The token when admitted, else -1.
const FENCED_PERMIT_ACQUIRE = `${FENCED_PERMIT_HELPERS}
local holders, q, d, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local me, value, ttl = ARGV[1], ARGV[2], tonumber(ARGV[5])
local now = clock()
local left = free(holders, now, tonumber(ARGV[3]))
if left > 0 then
  for _, e in ipairs(redis.call('ZRANGE', q, 0, -1)) do
    if e == me then break end
    if tonumber(string.match(redis.call('HGET', d, e) or '0', '^%S+')) >= now then
      left = left - 1
      if left == 0 then break end
    else
      redis.call('ZREM', q, e)
      redis.call('HDEL', d, e)
    end
  end
end
if left > 0 then
  redis.call('ZREM', q, me)
  redis.call('HDEL', d, me)
  redis.call('ZADD', holders, now + ttl, value)
  keep(holders, ttl)
  return token(fence, ARGV[7], ARGV[8])
end
redis.call('ZADD', q, 'NX', ARGV[4], me)
redis.call('HSET', d, me, (now + tonumber(ARGV[6])) .. ' ' .. ttl .. ' ' .. ARGV[7] .. ' ' .. value)
keep(q, tonumber(ARGV[6]))
keep(d, tonumber(ARGV[6]))
return -1`;
// A release, or the undo of an attempt: the value's permit given back and each free permit
// handed to the first fresh waiter (its value added with its ttl, a token drawn, '<value>
// <token>' published on its channel). ARGV: value, limit, retention, then for an undo the
// entry to keep in line (renewed for the entry ttl, at its place) or, giving up, to drop:
// entry, since, entry ttl, 'keep' | 'drop'. 1 when the permit was there.
const FENCED_PERMIT_RELEASE = `${FENCED_PERMIT_HELPERS}
local holders, q, d, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local now
if ARGV[4] then
  if ARGV[7] == 'drop' then
    redis.call('ZREM', q, ARGV[4])
    redis.call('HDEL', d, ARGV[4])
  else
    -- Back in line with no value: a release meets it first and keeps the permit for its
    -- next attempt, which comes within milliseconds (or it is stale after the entry ttl).
    now = clock()
    redis.call('ZADD', q, 'NX', ARGV[5], ARGV[4])
    redis.call('HSET', d, ARGV[4], (now + tonumber(ARGV[6])) .. ' 0 0 -')
  end
end
if redis.call('ZREM', holders, ARGV[1]) == 0 then return 0 end
now = now or clock()
local left = free(holders, now, tonumber(ARGV[2]))
while left > 0 do
  local e = redis.call('ZRANGE', q, 0, 0)[1]
  if not e then break end
  local untilMs, ttl, floor, value = string.match(redis.call('HGET', d, e) or '', '^(%S+) (%S+) (%S+) (%S+)$')
  local fresh = untilMs and tonumber(untilMs) >= now
  if fresh and value == '-' then break end
  redis.call('ZREM', q, e)
  redis.call('HDEL', d, e)
  if fresh then
    redis.call('ZADD', holders, now + tonumber(ttl), value)
    keep(holders, tonumber(ttl))
    redis.call('PUBLISH', string.match(e, '^%S+'), value .. ' ' .. token(fence, floor, ARGV[3]))
    left = left - 1
  end
end
return 1`;

/**
 * The fair semaphore floor with what the issue asks of a permit besides order and limit:
 * permits expire with their ttl (a crashed holder's too), entries of waiters that crashed
 * expire and are passed over, a waiter that gives up leaves nothing behind, every permit
 * carries a fencing token raised as this library raises its counter (floored at the
 * client's clock in microseconds), is held only within its validity (ttl less the time
 * the attempt took and the clock drift), and is extended on a timer while held. The
 * least script each of those needs, around rawFairSemaphore's design; no library around
 * it. An attempt is undone and tried again at its place when short of a quorum 20 ms
 * after its first vote, or when nothing was heard for half its entry's ttl (the entry
 * is renewed so). What it shows: whether a semaphore that keeps all of the issue's
 * promises can go as fast as RedlockSemaphore, which keeps none of them under contention.
 */
function rawFencedSemaphore() {
  return async (urls, { permits = SEMAPHORE_PERMITS } = {}) => {
    const quorum = limitQuorum(urls.length, permits);
    const { clients, subscribers, channel, waiting, vote } = await fairFloorSetup(urls, quorum, 'fenced-permit-floor');
    const ENTRY_TTL = 900;
    const RETENTION = 7 * 24 * 3600 * 1000;
    let shas;
    const run = (which, key, ...argv) =>
      clients.map((c, i) => c.evalsha(shas[i][which], 4, key, `${key}:waiters`, `${key}:data`, `${key}:fence`, ...argv));
    const extendEvery = (ttl) => ttl / 3;
    return {
      ready: async () =>
        (shas = await Promise.all(
          clients.map((c) => Promise.all([FENCED_PERMIT_ACQUIRE, FENCED_PERMIT_RELEASE].map((lua) => c.script('LOAD', lua)))),
        )),
      async acquire(key, ttl) {
        const since = Date.now();
        const me = `${channel} ${randomBytes(8).toString('base64url')}`;
        for (;;) {
          const value = randomBytes(20).toString('base64url');
          const started = performance.now();
          let timer;
          let w;
          const held = new Promise((resolve) => {
            waiting.set(value, (w = { votes: 0, token: 0, resolve }));
            timer = setTimeout(() => resolve(false), ENTRY_TTL / 2);
          });
          for (const reply of run(0, key, me, value, permits, since, ttl, ENTRY_TTL, Date.now() * 1000, RETENTION))
            reply.then(
              (r) => r !== -1 && vote(value, r),
              // A node down is no vote; a script's error is the floor's bug, and ends the run.
              (error) => {
                if (error?.name === 'ReplyError')
                  process.nextTick(() => {
                    throw error;
                  });
              },
            );
          const ok = await held;
          clearTimeout(timer);
          const validity = ttl - (performance.now() - started) - (ttl * 0.01 + 2);
          if (ok && validity > 0) {
            // The extension timer a held permit runs (an extension is not sent: holds are 1 ms).
            const extension = setTimeout(() => undefined, extendEvery(ttl));
            return { key, value, token: w.token, extension };
          }
          waiting.delete(value);
          await Promise.all(run(1, key, value, permits, RETENTION, me, since, ENTRY_TTL, 'keep'));
          await sleep(Math.random() * 5);
        }
      },
      async release({ key, value, extension }) {
        clearTimeout(extension);
        if (!(await atQuorum(run(1, key, value, permits, RETENTION), quorum, (r) => r === 1)))
          throw new Error('release not confirmed by a quorum');
      },
      close: () => closeAll([...clients, ...subscribers]),
    };
  };
}

/** A node-redis (`redis`, v5) client of `url`, connected, set up like the ioredis clients above (no offline queue). */
async function nodeRedisClient(url) {
  const { createClient } = await import('redis');
  const client = createClient({ url, disableOfflineQueue: true });
  client.on('error', () => undefined); // a node down is part of the scenario
  return client.connect();
}
const closeNodeRedis = (clients) => Promise.all(clients.map((c) => c.close().catch(() => undefined)));

/**
 * redlock-universal over clients of one library (`open(urls)`, `close(clients)`)
 * through its adapter class for them. Its lock objects are per key
 * (`createRedlock({ key })`), so one is made per acquisition; its round waits for
 * every node (allSettled).
 */
function redlockUniversal(open, close, adapterClass) {
  return async (urls, { wait }) => {
    const module = await import('redlock-universal');
    const clients = await open(urls);
    const adapters = clients.map((c) => new module[adapterClass](c));
    const retries = { retryAttempts: wait ? 1e9 : 0 };
    return {
      ready: async () => undefined,
      async acquire(key, ttl) {
        const lock = module.createRedlock({ adapters, key, ttl, ...retries });
        return { lock, handle: await lock.acquire() };
      },
      async release({ lock, handle }) {
        if (!(await lock.release(handle))) throw new Error('release not confirmed by a quorum');
      },
      attempts: ({ handle }) => handle.metadata?.attempts,
      close: () => close(clients),
    };
  };
}

/**
 * redis-semaphore's RedlockSemaphore over clients of the bench's ioredis copy. With
 * `keptToLimit`, its quorum (a majority, from its utils/redlock.js, which its acquire reads
 * at each call) is raised to the one a limit of `permits` needs (see limitQuorum). Each
 * bench worker runs one library, so the change stays in that process.
 */
function redlockSemaphore(keptToLimit) {
  return async (urls, { wait, permits = SEMAPHORE_PERMITS }) => {
    const { RedlockSemaphore } = await import('redis-semaphore');
    if (keptToLimit) {
      const require = createRequire(import.meta.url);
      const redlock = require(join(dirname(require.resolve('redis-semaphore')), 'utils', 'redlock.js'));
      redlock.getQuorum = (nodes) => limitQuorum(nodes, permits);
    }
    const clients = await clientsFor(urls);
    return {
      ready: async () => undefined,
      async acquire(key, ttl) {
        // refreshInterval 0: no automatic refresh, like the other adapters' locks.
        const options = { lockTimeout: ttl, refreshInterval: 0, ...(!wait && { acquireAttemptsLimit: 1 }) };
        const semaphore = new RedlockSemaphore(clients, key, permits, options);
        await semaphore.acquire();
        return semaphore;
      },
      release: (semaphore) => semaphore.release(),
      close: () => closeAll(clients),
    };
  };
}

/**
 * An older build for a before/after in one interleaved run: `run.mjs --baseline=<copy of dist/esm>`
 * copies it beside the run's own snapshot and sets BENCH_NEST_REDLOCK_BASELINE; without it, run.mjs
 * leaves these rows out.
 */
const baselineBuild = () => process.env.BENCH_NEST_REDLOCK_BASELINE;

export const adapters = {
  'nest-redlock (baseline)': { waits: 'as nest-redlock', baseline: true, create: nestRedlock({}, 'urls', baselineBuild) },
  'nest-redlock semaphore (baseline)': {
    waits: 'as nest-redlock semaphore',
    variant: 'semaphore',
    baseline: true,
    create: nestRedlockSemaphore({}, baselineBuild),
  },
  'nest-redlock (baseline: fencing and fair waiting off)': {
    waits: 'as nest-redlock',
    variant: 'speed',
    baseline: true,
    create: nestRedlock({ fencing: false, fairWaiting: false }, 'urls', baselineBuild),
  },
  'nest-redlock (baseline: clients passed in, other ioredis copy)': {
    waits: 'as nest-redlock',
    variant: 'speed',
    baseline: true,
    clients: 'other',
    create: nestRedlock({}, 'other', baselineBuild),
  },
  'nest-redlock (baseline: fencing and fair waiting off, clients passed in, other ioredis copy)': {
    waits: 'as nest-redlock',
    variant: 'speed',
    baseline: true,
    clients: 'other',
    create: nestRedlock({ fencing: false, fairWaiting: false }, 'other', baselineBuild),
  },

  'nest-redlock': {
    waits: 'retryCount 1e6, default retryDelay 200 + jitter [0,100) ms, fair waiting (woken by releases)',
    create: nestRedlock({}),
  },

  'nest-redlock (fencing off)': {
    waits: 'as nest-redlock',
    variant: 'speed', // run only in the speed scenarios, to show what the fencing tokens cost
    create: nestRedlock({ fencing: false }),
  },

  'nest-redlock (fencing and fair waiting off)': {
    waits: 'as nest-redlock',
    variant: 'speed', // the plain Redlock protocol, as the other libraries run it: what both features cost together
    create: nestRedlock({ fencing: false, fairWaiting: false }),
  },

  'nest-redlock (node-redis clients)': {
    waits: 'as nest-redlock',
    variant: 'speed', // the node-redis adapter beside the ioredis connections of the same run
    create: nestRedlockOver((urls) => Promise.all(urls.map(nodeRedisClient)), closeNodeRedis),
  },

  'nest-redlock (iovalkey clients)': {
    waits: 'as nest-redlock',
    variant: 'speed',
    create: nestRedlockOver(
      async (urls) => {
        const { Valkey } = await import('iovalkey');
        return clientsFor(urls, Valkey);
      },
      (clients) => closeAll(clients),
    ),
  },

  ...Object.fromEntries(
    Object.keys(clientSetups).flatMap((setup) => [
      [`nest-redlock (${passedIn(setup)})`, { waits: 'as nest-redlock', variant: 'speed', clients: setup, create: nestRedlock({}, setup) }],
      [
        `nest-redlock (fencing and fair waiting off, ${passedIn(setup)})`,
        { waits: 'as nest-redlock', variant: 'speed', clients: setup, create: nestRedlock({ fencing: false, fairWaiting: false }, setup) },
      ],
    ]),
  ),

  'nest-redlock (GLIDE clients)': {
    waits: 'as nest-redlock',
    variant: 'speed', // the uncontended cycle and the 64-caller throughput, beside nest-redlock over ioredis
    create: nestRedlockOver(glideClients, closeGlide),
  },

  // The plain protocol over the clients redlock-universal also takes, to compare like with like.
  // (No comma in these names: BENCH_LIBS is split on commas.)
  'nest-redlock (node-redis clients; fencing and fair waiting off)': {
    waits: 'as nest-redlock',
    variant: 'speed',
    create: nestRedlockOver((urls) => Promise.all(urls.map(nodeRedisClient)), closeNodeRedis, { fencing: false, fairWaiting: false }),
  },

  'nest-redlock (GLIDE clients; fencing and fair waiting off)': {
    waits: 'as nest-redlock',
    variant: 'speed',
    create: nestRedlockOver(glideClients, closeGlide, { fencing: false, fairWaiting: false }),
  },

  'nest-redlock (fair waiting off)': {
    waits: 'as nest-redlock, but plain jittered polling (fairWaiting: false)',
    variant: 'contention', // run only under contention, to show what fairness costs in throughput
    create: nestRedlock({ fairWaiting: false }),
  },

  /**
   * The floor: SET NX PX sent to every node at once, decided at quorum; a failed
   * attempt and the release are a compare-and-delete Lua script on every node,
   * decided when a quorum answered.
   */
  raw: {
    waits: 'polling, 200 + [0,100) ms between attempts',
    create: rawRound(clientsFor, closeAll, {
      set: (c, key, value, ttl) => c.set(key, value, 'PX', ttl, 'NX'),
      evalsha: (c, sha, key, value) => c.evalsha(sha, 1, key, value),
      load: (c, lua) => c.script('LOAD', lua),
    }),
  },

  // Speed scenarios only: what the wire costs each of nest-redlock's features (see FLOORS).
  ...Object.fromEntries(
    Object.entries(FLOORS).map(([name, floor]) => [
      `raw (floor: ${name})`,
      {
        waits: 'as raw',
        variant: 'speed',
        create: rawRound(clientsFor, closeAll, { load: (c, lua) => c.script('LOAD', lua) }, floor),
      },
    ]),
  ),

  // Contention only: the floor of a lock that hands the lock on to another process (see rawFair).
  'raw (fair hand-off)': {
    waits: 'in line: a release hands the lock to the first waiter, published to it',
    variant: 'contention',
    create: rawFair(),
  },

  // The same floor over GLIDE clients, one request per command: what any library over GLIDE starts from.
  'raw (GLIDE clients)': {
    waits: 'as raw',
    variant: 'speed',
    create: rawRound(glideClients, closeGlide, {
      set: (c, key, value, ttl) => c.customCommand(['SET', key, value, 'PX', String(ttl), 'NX']),
      evalsha: (c, sha, key, value) => c.customCommand(['EVALSHA', sha, '1', key, value]),
      load: (c, lua) => c.customCommand(['SCRIPT', 'LOAD', lua]),
    }),
  },

  // The same floor with the commands of a tick sent to each GLIDE client as one pipeline
  // (a non-atomic Batch), as nest-redlock sends them: what any library over GLIDE can reach at 64 callers.
  'raw (GLIDE clients, pipelined)': {
    waits: 'as raw',
    variant: 'speed',
    create: rawRound(glideClients, closeGlide, {
      set: (c, key, value, ttl) => tickBatch(c, ['SET', key, value, 'PX', String(ttl), 'NX']),
      evalsha: (c, sha, key, value) => tickBatch(c, ['EVALSHA', sha, '1', key, value]),
      load: (c, lua) => c.customCommand(['SCRIPT', 'LOAD', lua]),
    }),
  },

  'node-redlock v5': {
    waits: 'retryCount -1 (forever), default retryDelay 200 ± 100 ms',
    async create(urls, options) {
      return redlockV5Api((await import('redlock5')).default, urls, options);
    },
  },

  'node-redlock v4': {
    waits: 'retryCount -1 (forever), default retryDelay 200 ± 100 ms',
    async create(urls, { wait }) {
      const { default: Redlock } = await import('redlock4');
      const clients = await clientsFor(urls);
      const redlock = new Redlock(clients, wait ? { retryCount: -1 } : { retryCount: 0 });
      redlock.on('clientError', () => undefined);
      return {
        ready: async () => undefined,
        acquire: (key, ttl) => redlock.lock(key, ttl),
        release: (lock) => lock.unlock(),
        attempts: (lock) => lock.attempts,
        close: () => closeAll(clients),
      };
    },
  },

  /** A maintained fork of node-redlock v5, with the same API. */
  '@sesamecare-oss/redlock': {
    waits: 'retryCount -1 (forever), default retryDelay 200 ± 100 ms',
    async create(urls, options) {
      return redlockV5Api((await import('@sesamecare-oss/redlock')).Redlock, urls, options);
    },
  },

  /** The successor its maintainers name for @sesamecare-oss/redlock, through its ioredis adapter. */
  'redlock-universal': {
    waits: 'retryAttempts 1e9, default retryDelay 200 ms (no jitter)',
    create: redlockUniversal(clientsFor, closeAll, 'IoredisAdapter'),
  },

  // The one other library here that takes node-redis and GLIDE clients: beside nest-redlock's rows over the same clients.
  'redlock-universal (node-redis clients)': {
    waits: 'as redlock-universal',
    variant: 'speed',
    create: redlockUniversal((urls) => Promise.all(urls.map(nodeRedisClient)), closeNodeRedis, 'NodeRedisAdapter'),
  },

  'redlock-universal (GLIDE clients)': {
    waits: 'as redlock-universal',
    variant: 'speed',
    create: redlockUniversal(glideClients, closeGlide, 'GlideAdapter'),
  },

  /**
   * The semaphore scenario's pair: a semaphore of `permits` (default: the
   * scenario's 4) over the same 5 nodes, this library against redis-semaphore's
   * RedlockSemaphore. Run only in that scenario (variant 'semaphore').
   */
  'nest-redlock semaphore': {
    waits: 'as nest-redlock (fair waiting, woken by releases), `limit: permits`',
    variant: 'semaphore',
    create: nestRedlockSemaphore(),
  },

  // Semaphore scenario only: the floor of a fair semaphore kept to its limit (see rawFairSemaphore).
  'raw (fair semaphore hand-off)': {
    waits: 'in line: a release hands each free permit to the first waiter, published to it',
    variant: 'semaphore',
    create: rawFairSemaphore(),
  },

  // Semaphore scenario only: that floor, with expiry, crashed waiters, fencing and validity (see rawFencedSemaphore).
  'raw (fenced fair semaphore)': {
    waits: 'as raw (fair semaphore hand-off); an attempt short of its votes, or unanswered for 450 ms, tries again at its place',
    variant: 'semaphore',
    create: rawFencedSemaphore(),
  },

  /** What fencing and fair waiting cost a permit: the same semaphore with both off (polling, as RedlockSemaphore waits). */
  'nest-redlock semaphore (fencing and fair waiting off)': {
    waits: 'as nest-redlock (fair waiting off), `limit: permits`',
    variant: 'semaphore',
    create: nestRedlockSemaphore({ fencing: false, fairWaiting: false }),
  },

  /**
   * A design study for a semaphore at a majority quorum (see the README, "Slots, tried and
   * not shipped"): `permits` fair mutexes of this library, one per slot, each caller waiting
   * in the queue of one slot drawn at random. Its permits are not a semaphore's (no fencing
   * across slots, no global queue order); it measures what one fair queue per slot costs.
   */
  'nest-redlock (one fair mutex per slot)': {
    waits: 'as nest-redlock (fair waiting, woken by releases), on the mutex of a slot drawn at random',
    variant: 'semaphore',
    create: async (urls, { wait, permits = SEMAPHORE_PERMITS }) => {
      const { Redlock } = await import(nestRedlockBuild());
      const redlock = new Redlock({ nodes: urls, retryCount: wait ? 1_000_000 : 0 });
      return {
        ready: () => redlock.ready(),
        acquire: (key, ttl) => redlock.acquire(`${key}#${Math.floor(Math.random() * permits)}`, ttl),
        release: (lock) => lock.release(),
        attempts: (lock) => lock.attempts,
        close: () => redlock.close(),
      };
    },
  },

  'redis-semaphore RedlockSemaphore': {
    waits: 'defaults: retryInterval 10 ms, acquireTimeout 10 s',
    variant: 'semaphore',
    create: redlockSemaphore(false),
  },

  /**
   * RedlockSemaphore deciding at the quorum its limit needs (all 5 nodes for a limit of 4,
   * see permitQuorumOf in lib/core/quorum.ts) instead of a majority: the same library,
   * kept to its limit, to compare this library's semaphore with like for like.
   */
  'redis-semaphore RedlockSemaphore (quorum for its limit)': {
    waits: 'as redis-semaphore RedlockSemaphore',
    variant: 'semaphore',
    create: redlockSemaphore(true),
  },

  'redis-semaphore RedlockMutex': {
    waits: 'defaults: retryInterval 10 ms, acquireTimeout 10 s',
    async create(urls, { wait }) {
      const { RedlockMutex } = await import('redis-semaphore');
      const clients = await clientsFor(urls);
      return {
        ready: async () => undefined,
        async acquire(key, ttl) {
          // refreshInterval 0: no automatic refresh, like the other adapters' locks.
          const mutex = new RedlockMutex(
            clients,
            key,
            wait ? { lockTimeout: ttl, refreshInterval: 0 } : { lockTimeout: ttl, refreshInterval: 0, acquireAttemptsLimit: 1 },
          );
          await mutex.acquire();
          return mutex;
        },
        release: (mutex) => mutex.release(),
        close: () => closeAll(clients),
      };
    },
  },
};
