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
  SLOT_EXTEND,
  type Script,
} from '../core/layers.js';
// Not in layers.ts's list yet (lib/core is not this module's to edit).
import type { Ops } from './memory-data.js';
import { atLeast, PERMIT_IMPLEMENTATIONS as permits } from './memory-permit-scripts.js';
import { forceRelease, inspect } from './memory-operator-scripts.js';
import {
  firstFresh,
  freeSlots,
  isMark,
  keepMark,
  otherKind,
  prefixOf,
  shorterQueues,
  slotExtend,
  slotFreed,
} from './memory-slot-scripts.js';

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

/**
 * A key split as the scripts split it: after its first `prefixLength` bytes and a kind
 * of `kindLength` characters ('lock', 'queue'), the tag up to the next ':' ('' for a
 * mutex, '#<slot>' for a semaphore's slot), then the rest, the resource's part of its
 * every key (Lua's string.find and string.sub count bytes; the prefix ends on a
 * character boundary, KeyLayout made the key, so what follows it is a plain slice).
 */
function splitKey(key: string, prefixLength: number, kindLength: number): { tag: string; rest: string } {
  const tail = key.slice(prefixOf(key, prefixLength).length);
  const c = tail.indexOf(':', kindLength);
  // No ':' after the kind: the Lua fails on `c - 1`, c being nil.
  if (c < 0) throw new Error(`ERR attempt to perform arithmetic on local 'c' (a nil value): no ':' in ${key}`);
  return { tag: tail.slice(kindLength, c), rest: tail.slice(c + 1) };
}

/** ACQUIRE's arguments and keys, read and built as the Lua does (its comment in lib/core/scripts.ts says what each is). */
interface AcquireCall {
  readonly value: string;
  readonly ttl: string;
  readonly fair: boolean;
  /** The counters' retention ms; undefined with fencing off (a slot's call sends ''). */
  readonly retention?: string;
  /** ARGV[6] as sent: the client's clock in µs, or '' (a slot's call with fencing off). */
  readonly floor?: string;
  /** A semaphore's slot: the semaphore's limit. */
  readonly limit?: string;
  /** Resources. */
  readonly n: number;
  /** The Lua's K: the lock keys, then (fencing on) the fence counters, then (fair) each queue and deadlines, then each hand-overs. */
  readonly keys: readonly string[];
  /** Where the queue keys start (0-based). */
  readonly q0: number;
  /** The prefix, and the last lock key's tag and rest: what the Lua's `base`, `tag`, `rest` hold after its loop. */
  readonly base?: string;
  readonly tag?: string;
  readonly rest?: string;
  /** From the queue spec; undefined for '-' (fair, without joining the queue). */
  readonly waiter?: string;
  readonly since?: string;
  readonly entryTtl?: string;
  readonly attempt?: string;
}

function acquireCall(KEYS: readonly string[], ARGV: readonly string[]): AcquireCall {
  const [value, ttl, spec, prefixLength, sentRetention, floor, limit] = ARGV as [string, string, string, ...(string | undefined)[]];
  const fair = spec !== '';
  const retention = sentRetention === '' ? undefined : sentRetention;
  const n = KEYS.length;
  const q0 = retention !== undefined ? 2 * n : n;
  const [waiter, since, entryTtl, attempt] = spec === '-' ? [] : spec.split(' ');
  const call = { value, ttl, fair, retention, floor, limit, n, q0, waiter, since, entryTtl, attempt };
  // Without the prefix length, the lock keys are all there is.
  if (prefixLength === undefined) return { ...call, keys: KEYS };
  const p = Number(prefixLength);
  const base = prefixOf(KEYS[0]!, p);
  const keys = [...KEYS];
  let tag = '';
  let rest = '';
  for (let i = 1; i <= n; i++) {
    ({ tag, rest } = splitKey(KEYS[i - 1]!, p, 'lock'.length));
    if (retention !== undefined) keys[n + i - 1] = `${base}fence:${rest}`;
    if (fair) {
      keys[q0 + 2 * i - 2] = `${base}queue${tag}:${rest}`;
      keys[q0 + 2 * i - 1] = `${base}queue-deadlines${tag}:${rest}`;
      keys[q0 + 2 * n + i - 1] = `${base}handover${tag}:${rest}`;
    }
  }
  return { ...call, keys, base, tag, rest };
}

/** Resource `i`'s queue, its deadlines and its hand-overs (Lua's 1-based i). */
function queueKeys(call: AcquireCall, i: number): [queue: string, deadlines: string, handovers: string] {
  const { keys, q0, n } = call;
  return [keys[q0 + 2 * i - 2]!, keys[q0 + 2 * i - 1]!, keys[q0 + 2 * n + i - 1]!];
}

/**
 * How many lock keys hold this value already, and the first held by another.
 * A run that finds all keys with this value took them already (a resent
 * command, or an earlier attempt whose undo was lost): they are set again.
 */
function scanLocks(ops: Ops, call: AcquireCall): { mine: number; blocker?: number; blockedBy?: string } {
  let mine = 0;
  for (let i = 0; i < call.n; i++) {
    const v = ops.get(call.keys[i]!);
    if (v === call.value) mine++;
    else if (v !== null) return { mine, blocker: i, blockedBy: v };
  }
  return { mine };
}

/**
 * Whether a free resource is reserved for a longer waiter whose entry is still
 * fresh; stale heads are dropped on the way. (The Lua takes a single key with
 * SET NX first and undoes it when reserved: the same outcome.)
 */
function reservedForAnother(ops: Ops, call: AcquireCall): boolean {
  for (let i = 1; i <= call.n; i++) {
    const [q, d, h] = queueKeys(call, i);
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

/** A refused waiter's place in the queues: its first-attempt time, within a second of the node's clock. */
function placeOf(ops: Ops, call: AcquireCall): string {
  const now = ops.clockMs();
  const at = Number(call.since);
  return at < now - 1000 ? String(now - 1000) : at > now + 1000 ? String(now + 1000) : call.since!;
}

/** A refused waiter queues on every resource, at its place (see placeOf). */
function joinQueues(ops: Ops, call: AcquireCall, position: string): void {
  const waiter = call.waiter!;
  const ttl = Number(call.entryTtl);
  for (let i = 1; i <= call.n; i++) {
    const [q, d] = queueKeys(call, i);
    ops.zaddNx(q, position, waiter);
    ops.hset(d, waiter, String(ops.clockMs() + ttl));
    atLeast(ops, q, call.entryTtl!);
    atLeast(ops, d, call.entryTtl!);
  }
  // A waiter for one resource leaves its hand-over: the floor '0' with fencing off (a slot's call then sends '').
  if (call.n === 1) {
    const h = queueKeys(call, 1)[2];
    const floor = call.retention === undefined ? '0' : (call.floor ?? '0');
    ops.hset(h, waiter, `${call.ttl} ${call.attempt} ${call.retention ?? '0'} ${floor} m ${call.value}`);
    atLeast(ops, h, call.entryTtl!);
  }
}

/** The fencing token of a lock just taken; counters are raised to it unless the lock was this value's already. */
function fenceToken(ops: Ops, call: AcquireCall, mine: number): number {
  const { n, keys } = call;
  if (mine === n) {
    let token = 0;
    for (let i = n; i < 2 * n; i++) token = Math.max(token, luaNumber(ops.get(keys[i]!)) ?? 0);
    return token;
  }
  // Above every counter and at least the client's clock in µs (the floor); every counter is raised to it.
  const floor = Number(call.floor);
  let token = floor;
  for (let i = n; i < 2 * n; i++) {
    const c = luaNumber(ops.get(keys[i]!));
    if (c !== undefined && c >= token) token = c + 1;
  }
  const text = token > floor ? formatInteger(token) : call.floor!;
  for (let i = n; i < 2 * n; i++) ops.set(keys[i]!, text, call.retention!);
  return token;
}

const acquire: Implementation = (ops, KEYS, ARGV) => {
  const call = acquireCall(KEYS, ARGV);
  const { limit, base, rest } = call;
  if (limit !== undefined) {
    const other = otherKind(ops, base!, rest!, limit);
    if (other !== undefined) throw new Error(`WRONGKIND ${other}`);
  }
  const { mine, blocker, blockedBy } = scanLocks(ops, call);
  // A semaphore's marker at a mutex's key: in use as a semaphore, typed.
  if (blockedBy?.startsWith('#') && limit === undefined) throw new Error(`WRONGKIND ${blockedBy.slice(1)}`);
  const reserved = call.fair && blocker === undefined && mine < call.n && reservedForAnother(ops, call);
  if (blocker !== undefined || reserved) {
    const place = call.fair && call.waiter !== undefined ? placeOf(ops, call) : undefined;
    if (place !== undefined) joinQueues(ops, call, place);
    // A slot held by another: the others free here, named (it stays queued here until it
    // moves); with none free, those with a queue much shorter for this waiter.
    if (blocker !== undefined && limit !== undefined) {
      let named = freeSlots(ops, base!, rest!, call.tag!, limit);
      if (named.length === 0 && place !== undefined) named = shorterQueues(ops, base!, rest!, call.tag!, limit, call.waiter!, place);
      if (named.length > 0) return [0, -1, named];
    }
    return blocker !== undefined ? [0, -1] : [0, -3];
  }
  if (limit !== undefined) keepMark(ops, `${base!}lock:${rest!}`, limit, call.ttl);
  for (let i = 0; i < call.n; i++) ops.set(call.keys[i]!, call.value, call.ttl);
  return call.retention !== undefined ? [1, fenceToken(ops, call, mine)] : [1, 0];
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

const release: Implementation = (ops, KEYS, ARGV) => {
  const value = ARGV[0]!;
  let deleted = 0;
  if (ARGV.length === 1) {
    for (const key of KEYS) {
      if (ops.get(key) === value) {
        ops.del(key);
        deleted++;
      }
    }
    return deleted;
  }
  // As the script builds them from each lock key: a semaphore slot's queue keys are its own, its counter the resource's.
  const p = Number(ARGV[1]);
  const base = prefixOf(KEYS[0]!, p);
  const [waiter, undoneBy, later] = [ARGV[2] ?? '', ARGV[3], ARGV[4]];
  for (const key of KEYS) {
    const { tag, rest } = splitKey(key, p, 'lock'.length);
    const [q, d, h] = [`${base}queue${tag}:${rest}`, `${base}queue-deadlines${tag}:${rest}`, `${base}handover${tag}:${rest}`];
    if (waiter !== '') {
      ops.zrem(q, waiter);
      ops.hdel(d, waiter);
      ops.hdel(h, waiter);
    }
    if (ops.get(key) !== value) continue;
    ops.del(key);
    deleted++;
    const head = firstFresh(ops, q, d, h, undoneBy);
    if (head !== undefined && head !== undoneBy) {
      grant(
        ops,
        key,
        `${base}fence:${rest}`,
        h,
        head,
        wakeChannel(`${base}wake:`, head),
        tag !== '' ? `${base}lock:${rest}` : undefined,
        later,
      );
    } else if (head === undefined && tag !== '') {
      slotFreed(ops, base, rest, tag, (...queue) => firstFresh(ops, ...queue));
    }
  }
  return deleted;
};

/**
 * GRANT: hands a free lock key over to the head of its queue (fresh: found by
 * firstFresh) when it carries a hand-over, raising the counter as ACQUIRE does
 * (to the releaser's floor, `later`, where it is above the entry's), and a
 * semaphore slot's marker (`mark`) to outlive the permit; else only wakes the head.
 */
function grant(
  ops: Ops,
  lockKey: string,
  fenceKey: string,
  handovers: string,
  head: string,
  channel: string,
  mark?: string,
  later?: string,
): void {
  const entry = handOverOf(ops.hget(handovers, head));
  // exists, not get: a permit's holders there (the resource mixed up) make GRANT's SET NX fail, not raise WRONGTYPE.
  if (!entry || ops.exists(lockKey) > 0) {
    ops.publish(channel, head);
    return;
  }
  ops.set(lockKey, entry.value, entry.ttl);
  // The marker only (a mutex's key there is left as it is).
  if (mark !== undefined && ops.pttl(mark) < Number(entry.ttl) && isMark(ops, mark).limit !== undefined)
    ops.pexpire(mark, String(2 * Number(entry.ttl)));
  let token = '0';
  if (entry.retention !== '0') {
    const floor = later !== undefined && Number(later) > Number(entry.floor) ? later : entry.floor;
    const c = luaNumber(ops.get(fenceKey));
    token = c !== undefined && c >= Number(floor) ? formatInteger(c + 1) : floor;
    ops.set(fenceKey, token, entry.retention);
  }
  ops.publish(channel, `${head} ${entry.attempt} ${token}`);
}

const leaveQueue: Implementation = (ops, KEYS, ARGV) => {
  // The lock, counter and hand-over keys, built from the wake prefix and the queue key as the script does.
  const base = ARGV[1]!.slice(0, -'wake:'.length);
  for (let i = 0; i < KEYS.length; i += 2) {
    const [q, d] = [KEYS[i]!, KEYS[i + 1]!];
    // A semaphore slot's queue ('queue#<slot>:'): that slot's lock and hand-overs.
    const { tag, rest } = splitKey(q, Buffer.byteLength(base), 'queue'.length);
    const [lockKey, h] = [`${base}lock${tag}:${rest}`, `${base}handover${tag}:${rest}`];
    const first = ops.zfirst(q);
    const entry = handOverOf(ops.hget(h, ARGV[0]!));
    ops.zrem(q, ARGV[0]!);
    ops.hdel(d, ARGV[0]!);
    ops.hdel(h, ARGV[0]!);
    const freed = entry !== undefined && ops.get(lockKey) === entry.value;
    if (freed) ops.del(lockKey);
    if (first === ARGV[0] || freed) {
      const head = firstFresh(ops, q, d, h);
      if (head !== undefined) {
        grant(ops, lockKey, `${base}fence:${rest}`, h, head, wakeChannel(ARGV[1]!, head), tag !== '' ? `${base}lock:${rest}` : undefined);
      }
    }
  }
  return 1;
};

/**
 * The library's Lua scripts as JavaScript with the same semantics, step by
 * step (the Lua is in lib/core/scripts.ts and the files whose Lua it pastes in
 * or lists: grant-lua.ts, slot-scripts.ts, permit-scripts.ts, operator-scripts.ts).
 * Lua's 1-based KEYS[i] is keys[i - 1].
 * The shared behavioural suite runs against both, so they cannot drift apart
 * unnoticed; `IMPLEMENTED_SHAS` names the Lua text each was written from.
 */
const IMPLEMENTATIONS = new Map<Script, Implementation>([
  [ACQUIRE, acquire],
  [CONFIRM_TOKEN, confirmToken],
  [EXTEND, extend],
  [SLOT_EXTEND, slotExtend],
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
  acquire: 'b7e9781e0a4f6272a8d44cb31a83279f9923d0ee',
  'confirm-token': '2d850f47b410020965c746ec96f022c19ea2ebe0',
  extend: '6a675cd8e12e2285083b1e41ad7c1e77638f584f',
  'slot-extend': 'dc39809bfc2c07ecf71210c413dd63d3b39376da',
  inspect: '575d9e652dfd2a4cc8ebe7f1618e10d7fb0bfa24',
  'fenced-access': '561b03b518fa7297b0bff7bdd33790191b028255',
  release: '4368e967d52d944bc434fde1b8a118034fd80b13',
  'leave-queue': 'da7bc1dd144aa9a188e4ef7e63a9e0d7b7ba3275',
  'force-release': '74dcde24813a193e9fc212947f71f7e4fb4e52d3',
  'permit-acquire': 'c68bfb316282cca5c117b10779e211a088b442d2',
  'permit-confirm': '85899c8d4ef9e833e32b8eeea1e91743454cd0b7',
  'permit-extend': '900ba6bbf43e254818b3ad8dc2a2c945548e988f',
  'permit-release': '4eb24741763a4e23f57a4d8f3b8913299d62afcf',
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
