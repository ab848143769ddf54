import { createHash } from 'node:crypto';
import {
  ACQUIRE,
  CONFIRM_TOKEN,
  EXTEND,
  FENCED_ACCESS,
  FORCE_RELEASE,
  INSPECT,
  LEAVE_QUEUE,
  PERMIT_ACQUIRE,
  PERMIT_CONFIRM,
  PERMIT_EXTEND,
  PERMIT_RELEASE,
  RELEASE,
  type Script,
} from '../core/layers.js';
import type { Ops } from './memory-data.js';
import { atLeast, PERMIT_IMPLEMENTATIONS as permits } from './memory-permit-scripts.js';
import { forceRelease, inspect } from './memory-operator-scripts.js';

/** A script argument as ioredis takes it. */
export type Arg = string | number | Buffer;

type Implementation = (ops: Ops, keys: readonly string[], argv: readonly string[]) => unknown;

/** Lua's `tonumber` on a string: a number, or undefined (nil). */
function luaNumber(text: string | null | undefined): number | undefined {
  if (text === null || text === undefined || text.trim() === '') return undefined;
  const value = Number(text);
  return Number.isNaN(value) ? undefined : value;
}

/** Lua's `string.format('%.0f', n)`. */
function formatInteger(n: number): string {
  return n.toFixed(0);
}

/** The channel the scripts wake a waiter on: the prefix, then the waiter id's part before the first '.'. */
function wakeChannel(prefix: string, waiter: string): string {
  const dot = waiter.indexOf('.');
  return prefix + (dot < 0 ? waiter : waiter.slice(0, dot));
}

/** ACQUIRE's arguments, read as the Lua reads them (its comment in lib/core/scripts.ts says what each is). */
interface AcquireCall {
  readonly value: string;
  readonly ttl: string;
  readonly fair: boolean;
  readonly fencing: boolean;
  /** Resources. */
  readonly n: number;
  /** Where the queue keys start (0-based). */
  readonly q0: number;
  /** From the queue spec; undefined for '-' (fair, without joining the queue). */
  readonly waiter?: string;
  readonly since?: string;
  readonly entryTtl?: string;
  readonly attempt?: string;
}

function acquireCall(KEYS: readonly string[], ARGV: readonly string[]): AcquireCall {
  const spec = ARGV[2]!;
  const fair = spec !== '';
  const fencing = ARGV[3] !== undefined;
  const n = KEYS.length / (1 + (fencing ? 1 : 0) + (fair ? 3 : 0));
  const [waiter, since, entryTtl, attempt] = spec === '-' ? [] : spec.split(' ');
  return { value: ARGV[0]!, ttl: ARGV[1]!, fair, fencing, n, q0: fencing ? 2 * n : n, waiter, since, entryTtl, attempt };
}

/** Resource `i`'s queue, its deadlines and its hand-overs (Lua's 1-based i). */
function queueKeys(KEYS: readonly string[], call: AcquireCall, i: number): [queue: string, deadlines: string, handovers: string] {
  return [KEYS[call.q0 + 2 * i - 2]!, KEYS[call.q0 + 2 * i - 1]!, KEYS[call.q0 + 2 * call.n + i - 1]!];
}

/**
 * How many lock keys hold this value already, and the first held by another.
 * A run that finds all keys with this value took them already (a resent
 * command, or an earlier attempt whose undo was lost): they are set again.
 */
function scanLocks(ops: Ops, KEYS: readonly string[], call: AcquireCall): { mine: number; blocker?: number } {
  let mine = 0;
  for (let i = 0; i < call.n; i++) {
    const v = ops.get(KEYS[i]!);
    if (v === call.value) mine++;
    else if (v !== null) return { mine, blocker: i };
  }
  return { mine };
}

/** GRANT's firstFresh: the first waiter whose entry is fresh (or `keep`), stale ones before it dropped. */
function firstFresh(ops: Ops, q: string, d: string, h: string, keep?: string): string | undefined {
  for (;;) {
    const head = ops.zfirst(q);
    if (head === undefined || head === keep || (luaNumber(ops.hget(d, head)) ?? 0) >= ops.clockMs()) return head;
    ops.zrem(q, head);
    ops.hdel(d, head);
    ops.hdel(h, head);
  }
}

/**
 * Whether a free resource is reserved for a longer waiter whose entry is still
 * fresh; stale heads are dropped on the way. (The Lua takes a single key with
 * SET NX first and undoes it when reserved: the same outcome.)
 */
function reservedForAnother(ops: Ops, KEYS: readonly string[], call: AcquireCall): boolean {
  for (let i = 1; i <= call.n; i++) {
    const [q, d, h] = queueKeys(KEYS, call, i);
    for (;;) {
      const head = ops.zfirst(q);
      if (head === undefined || head === call.waiter) break;
      if ((luaNumber(ops.hget(d, head)) ?? 0) >= ops.clockMs()) return true;
      ops.zrem(q, head);
      ops.hdel(d, head);
      ops.hdel(h, head);
    }
  }
  return false;
}

/** A waiter's hand-over (see ACQUIRE and GRANT), when it left one. */
function handOverOf(entry: string | null): { ttl: string; attempt: string; retention: string; floor: string; value: string } | undefined {
  // A mutex waiter's only (kind 'm'), as GRANT's.
  const match = entry === null ? null : /^(\S+) (\S+) (\S+) (\S+) m (.*)$/s.exec(entry);
  if (!match) return undefined;
  const [, ttl, attempt, retention, floor, value] = match;
  return { ttl: ttl!, attempt: attempt!, retention: retention!, floor: floor!, value: value! };
}

/** A refused waiter queues on every resource, at its first-attempt time within a second of the node's clock. */
function joinQueues(ops: Ops, KEYS: readonly string[], ARGV: readonly string[], call: AcquireCall): void {
  const waiter = call.waiter!;
  const ttl = Number(call.entryTtl);
  const now = ops.clockMs();
  const at = Number(call.since);
  const position = at < now - 1000 ? String(now - 1000) : at > now + 1000 ? String(now + 1000) : call.since!;
  for (let i = 1; i <= call.n; i++) {
    const [q, d] = queueKeys(KEYS, call, i);
    ops.zaddNx(q, position, waiter);
    ops.hset(d, waiter, String(ops.clockMs() + ttl));
    atLeast(ops, q, call.entryTtl!);
    atLeast(ops, d, call.entryTtl!);
  }
  // A waiter for one resource leaves its hand-over (ARGV without the prefix length).
  if (call.n === 1) {
    const h = queueKeys(KEYS, call, 1)[2];
    ops.hset(h, waiter, `${call.ttl} ${call.attempt} ${ARGV[3] ?? '0'} ${ARGV[4] ?? '0'} m ${call.value}`);
    atLeast(ops, h, call.entryTtl!);
  }
}

/** The fencing token of a lock just taken; counters are raised to it unless the lock was this value's already. */
function fenceToken(ops: Ops, KEYS: readonly string[], ARGV: readonly string[], call: AcquireCall, mine: number): number {
  const { n } = call;
  if (mine === n) {
    let token = 0;
    for (let i = n; i < 2 * n; i++) token = Math.max(token, luaNumber(ops.get(KEYS[i]!)) ?? 0);
    return token;
  }
  // Above every counter and at least the client's clock in µs (ARGV[5]); every counter is raised to it.
  const floor = Number(ARGV[4]);
  let token = floor;
  for (let i = n; i < 2 * n; i++) {
    const c = luaNumber(ops.get(KEYS[i]!));
    if (c !== undefined && c >= token) token = c + 1;
  }
  const text = token > floor ? formatInteger(token) : ARGV[4]!;
  for (let i = n; i < 2 * n; i++) ops.set(KEYS[i]!, text, ARGV[3]!);
  return token;
}

/**
 * A resource's key of another kind, built from its lock key as ACQUIRE and
 * RELEASE do: the first `prefixLength` bytes, the kind, then what follows
 * `<prefix>lock:` (Lua's string.sub counts bytes).
 */
function keyOfKind(lockKey: string, prefixLength: number, kind: string): string {
  const prefix = prefixOf(lockKey, prefixLength);
  // The prefix ends on a character boundary (KeyLayout made the key): what follows it is a plain slice.
  return `${prefix}${kind}${lockKey.slice(prefix.length + 5)}`;
}

/** The key prefix: the first `prefixLength` bytes of a key (as characters when they are all ASCII, the usual case). */
function prefixOf(key: string, prefixLength: number): string {
  const head = key.slice(0, prefixLength);
  return Buffer.byteLength(head) === head.length ? head : Buffer.from(key).subarray(0, prefixLength).toString();
}

/**
 * ACQUIRE's keys and arguments as the script lays them out once it has built
 * the keys it is not sent (KEYS: locks, fence counters, then queue and
 * deadlines per resource; ARGV without the prefix length).
 */
function expandAcquire(KEYS: readonly string[], ARGV: readonly string[]): [keys: string[], argv: string[]] {
  if (ARGV[3] === undefined) return [[...KEYS], [...ARGV]];
  const p = Number(ARGV[3]);
  const fencing = ARGV[4] !== undefined;
  const fair = ARGV[2] !== '';
  const fences = fencing ? KEYS.map((k) => keyOfKind(k, p, 'fence:')) : [];
  const queues = fair ? KEYS.flatMap((k) => [keyOfKind(k, p, 'queue:'), keyOfKind(k, p, 'queue-deadlines:')]) : [];
  const handovers = fair ? KEYS.map((k) => keyOfKind(k, p, 'handover:')) : [];
  return [
    [...KEYS, ...fences, ...queues, ...handovers],
    [ARGV[0]!, ARGV[1]!, ARGV[2]!, ...ARGV.slice(4)],
  ];
}

const acquire: Implementation = (ops, sentKeys, sentArgv) => {
  const [KEYS, ARGV] = expandAcquire(sentKeys, sentArgv);
  const call = acquireCall(KEYS, ARGV);
  const { mine, blocker } = scanLocks(ops, KEYS, call);
  const reserved = call.fair && blocker === undefined && mine < call.n && reservedForAnother(ops, KEYS, call);
  if (blocker !== undefined || reserved) {
    if (call.fair && call.waiter !== undefined) joinQueues(ops, KEYS, ARGV, call);
    return blocker !== undefined ? [0, -1] : [0, -3];
  }
  for (let i = 0; i < call.n; i++) ops.set(KEYS[i]!, call.value, call.ttl);
  return call.fencing ? [1, fenceToken(ops, KEYS, ARGV, call, mine)] : [1, 0];
};

const confirmToken: Implementation = (ops, KEYS, ARGV) => {
  const n = Number(ARGV[2]);
  for (let i = 0; i < n; i++) if (ops.get(KEYS[i]!) !== ARGV[0]) return 0;
  const token = Number(ARGV[1]);
  for (let i = n; i < 2 * n; i++) {
    const c = luaNumber(ops.get(KEYS[i]!)) ?? 0;
    if (c < token) ops.set(KEYS[i]!, ARGV[1]!, ARGV[3]!);
  }
  return 1;
};

const extend: Implementation = (ops, KEYS, ARGV) => {
  for (const key of KEYS) if (ops.get(key) !== ARGV[0]) return 0;
  for (const key of KEYS) ops.pexpire(key, ARGV[1]!);
  return 1;
};

const fencedAccess: Implementation = (ops, KEYS, ARGV) => {
  const token = luaNumber(ARGV[0]) ?? NaN;
  const seen = luaNumber(ops.get(KEYS[1]!)) ?? 0;
  if (token < seen) return [0, formatInteger(seen)];
  if (token > seen) ops.set(KEYS[1]!, ARGV[0]!);
  if (ARGV[1] === 'set') {
    ops.set(KEYS[0]!, ARGV[2]!);
    return [1, null];
  } else if (ARGV[1] === 'del') {
    ops.del(KEYS[0]!);
    return [1, null];
  }
  return [1, ops.get(KEYS[0]!)];
};

const release: Implementation = (ops, locks, sentArgv) => {
  const fair = sentArgv.length > 1;
  const n = locks.length;
  // As the script builds them: each resource's queue and deadlines, and the wake channel prefix.
  const p = Number(sentArgv[1]);
  const KEYS = fair ? [...locks, ...locks.flatMap((k) => [keyOfKind(k, p, 'queue:'), keyOfKind(k, p, 'queue-deadlines:')])] : locks;
  const ARGV = fair ? [sentArgv[0]!, `${prefixOf(locks[0]!, p)}wake:`, ...sentArgv.slice(2)] : sentArgv;
  const waiter = ARGV[2] ?? '';
  let deleted = 0;
  for (let i = 1; i <= n; i++) {
    const freed = ops.get(KEYS[i - 1]!) === ARGV[0];
    if (freed) {
      ops.del(KEYS[i - 1]!);
      deleted++;
    }
    if (fair) {
      const [q, d, h] = [KEYS[n + 2 * i - 2]!, KEYS[n + 2 * i - 1]!, keyOfKind(KEYS[i - 1]!, p, 'handover:')];
      if (waiter !== '') {
        ops.zrem(q, waiter);
        ops.hdel(d, waiter);
        ops.hdel(h, waiter);
      }
      if (freed) {
        const head = firstFresh(ops, q, d, h, ARGV[3]);
        if (head !== undefined && head !== ARGV[3]) {
          grant(ops, KEYS[i - 1]!, keyOfKind(KEYS[i - 1]!, p, 'fence:'), h, head, wakeChannel(ARGV[1]!, head));
        }
      }
    }
  }
  return deleted;
};

/**
 * GRANT: hands a free lock key over to the head of its queue (fresh: found by
 * firstFresh) when it carries a hand-over, raising the counter as ACQUIRE does;
 * else only wakes the head.
 */
function grant(ops: Ops, lockKey: string, fenceKey: string, handovers: string, head: string, channel: string): void {
  const entry = handOverOf(ops.hget(handovers, head));
  // exists, not get: a permit's holders there (the resource mixed up) make GRANT's SET NX fail, not raise WRONGTYPE.
  if (!entry || ops.exists(lockKey) > 0) {
    ops.publish(channel, head);
    return;
  }
  ops.set(lockKey, entry.value, entry.ttl);
  let token = '0';
  if (entry.retention !== '0') {
    const c = luaNumber(ops.get(fenceKey));
    token = c !== undefined && c >= Number(entry.floor) ? formatInteger(c + 1) : entry.floor;
    ops.set(fenceKey, token, entry.retention);
  }
  ops.publish(channel, `${head} ${entry.attempt} ${token}`);
}

const leaveQueue: Implementation = (ops, KEYS, ARGV) => {
  // The lock and counter keys, built from the wake prefix and the queue key as the script does.
  const base = ARGV[1]!.slice(0, -'wake:'.length);
  for (let i = 0; i < KEYS.length; i += 2) {
    const [q, d] = [KEYS[i]!, KEYS[i + 1]!];
    const rest = q.slice(base.length + 'queue:'.length);
    const [lockKey, h] = [`${base}lock:${rest}`, `${base}handover:${rest}`];
    const first = ops.zfirst(q);
    const entry = handOverOf(ops.hget(h, ARGV[0]!));
    ops.zrem(q, ARGV[0]!);
    ops.hdel(d, ARGV[0]!);
    ops.hdel(h, ARGV[0]!);
    const freed = entry !== undefined && ops.get(lockKey) === entry.value;
    if (freed) ops.del(lockKey);
    if (first === ARGV[0] || freed) {
      const head = firstFresh(ops, q, d, h);
      if (head !== undefined) grant(ops, lockKey, `${base}fence:${rest}`, h, head, wakeChannel(ARGV[1]!, head));
    }
  }
  return 1;
};

/**
 * The library's Lua scripts as JavaScript with the same semantics, step by
 * step (the Lua is in lib/core/scripts.ts). Lua's 1-based KEYS[i] is keys[i - 1].
 * The shared behavioural suite runs against both, so they cannot drift apart
 * unnoticed; `IMPLEMENTED_SHAS` names the Lua text each was written from.
 */
const IMPLEMENTATIONS = new Map<Script, Implementation>([
  [ACQUIRE, acquire],
  [CONFIRM_TOKEN, confirmToken],
  [EXTEND, extend],
  [INSPECT, inspect],
  [FENCED_ACCESS, fencedAccess],
  [RELEASE, release],
  [LEAVE_QUEUE, leaveQueue],
  [FORCE_RELEASE, forceRelease],
  [PERMIT_ACQUIRE, permits.permitAcquire],
  [PERMIT_CONFIRM, permits.permitConfirm],
  [PERMIT_EXTEND, permits.permitExtend],
  [PERMIT_RELEASE, permits.permitRelease],
]);

const BY_SHA = new Map([...IMPLEMENTATIONS].map(([script, run]) => [script.sha, { script, run }]));

/**
 * SHA-1 of the Lua text each JavaScript twin above was written from. A test
 * compares them with the scripts in lib/core/scripts.ts: when a script changes,
 * its twin must be reviewed and this table updated.
 */
export const IMPLEMENTED_SHAS: Readonly<Record<string, string>> = Object.freeze({
  acquire: 'f8f699c4a0074b1d48b2f37154543ab5aff8c76b',
  'confirm-token': '2d850f47b410020965c746ec96f022c19ea2ebe0',
  extend: '6a675cd8e12e2285083b1e41ad7c1e77638f584f',
  inspect: '379a1319cfdf0e9d2ea7249fbdf01c37a86bb2db',
  'fenced-access': '561b03b518fa7297b0bff7bdd33790191b028255',
  release: 'a04c4494dc58cc0f93cb711d1e2a86ba5272d0f9',
  'leave-queue': 'e03b55605b99b6729d61745d5a47762ff6c9a392',
  'force-release': 'bf7bded57eb7178a280b823854665c627cd195ce',
  'permit-acquire': '7f86e4d9513ef77bfce883b5fd7632f034d6ec08',
  'permit-confirm': '1faf94b7bacb2a14a9346998aedf48edbd1e05c3',
  'permit-extend': 'c43bc16fe27652855e8ccc6a15529191144ba53d',
  'permit-release': '80feed0fd64b6ee83be1b5ced7d71241db83cef3',
});

/** The scripts a memory node runs, by name and current SHA. */
export function memoryNodeScripts(): readonly Script[] {
  return [...IMPLEMENTATIONS.keys()];
}

/** EVALSHA: NOSCRIPT unless `sha` is one of this library's scripts and `loaded` (by an EVAL) on this server. */
export function evalSha(ops: Ops, loaded: ReadonlySet<string>, sha: string, numKeys: number | string, keysAndArgs: Arg[]): unknown {
  const implementation = BY_SHA.get(String(sha).toLowerCase());
  if (!implementation || !loaded.has(implementation.script.sha)) {
    throw new Error('NOSCRIPT No matching script. Please use EVAL.');
  }
  return runImplementation(implementation.run, ops, numKeys, keysAndArgs);
}

/** The SHA-1 an EVAL of `lua` caches the script under. */
export function scriptSha(lua: string): string {
  return createHash('sha1').update(lua).digest('hex');
}

/** EVAL of one of this library's scripts, which `loaded` (the server's script cache) then holds; other scripts are refused. */
export function evalLua(ops: Ops, loaded: Set<string>, sha: string, numKeys: number | string, keysAndArgs: Arg[]): unknown {
  const implementation = ownScript(sha);
  loaded.add(sha);
  return runImplementation(implementation.run, ops, numKeys, keysAndArgs);
}

/** SCRIPT LOAD of one of this library's scripts: cached in `loaded`, not run; other scripts are refused. */
export function loadLua(loaded: Set<string>, lua: string): string {
  const sha = scriptSha(lua);
  ownScript(sha);
  loaded.add(sha);
  return sha;
}

function ownScript(sha: string) {
  const implementation = BY_SHA.get(sha);
  if (!implementation) {
    throw new Error(`ERR MemoryRedisNode runs only nest-redlock's own scripts; this one (sha ${sha}) is not one of them`);
  }
  return implementation;
}

function runImplementation(run: Implementation, ops: Ops, numKeys: number | string, keysAndArgs: Arg[]): unknown {
  const n = Number(numKeys);
  if (!Number.isInteger(n) || n < 0) throw new Error("ERR Number of keys can't be negative");
  if (n > keysAndArgs.length) throw new Error("ERR Number of keys can't be greater than number of args");
  const strings = keysAndArgs.map((a) => (Buffer.isBuffer(a) ? a.toString() : String(a)));
  return run(ops, strings.slice(0, n), strings.slice(n));
}
