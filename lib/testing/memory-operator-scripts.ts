import { createHash } from 'node:crypto';
import type { Ops } from './memory-data.js';
import { heldWeight, wake } from './memory-permit-scripts.js';
import { firstFresh, isMark, prefixOf, slotFreed } from './memory-slot-scripts.js';

// The operators' scripts (lib/core/operator-scripts.ts) as JavaScript, step by
// step, for MemoryRedisNode: KEYS[i] of the Lua is keys[i - 1] here.

type Implementation = (ops: Ops, keys: readonly string[], argv: readonly string[]) => unknown;

/** A member's value (a writer's ':w' left out) and whether it is a writer's. */
function valueOf(member: string): [value: string, writer: 0 | 1] {
  return member.endsWith(':w') ? [member.slice(0, -2), 1] : [member, 0];
}

const fingerprint = (value: string) => createHash('sha1').update(value).digest('hex').slice(0, 12);

/** Lua's `string.match(value, '%..*$') or false`. */
function identityOf(value: string): string | null {
  const dot = value.indexOf('.');
  return dot < 0 ? null : value.slice(dot);
}

/** SLOTS's slotKey: slot `slot`'s key of `kind` ('lock', 'queue'), built from the resource's lock key and the prefix length. */
function slotKey(lockKey: string, p: number, kind: string, slot: number): string {
  const prefix = prefixOf(lockKey, p);
  return `${prefix}${kind}#${slot}:${lockKey.slice(prefix.length + 'lock:'.length)}`;
}

/** SLOTS's heldSlots: the semaphore's slots held here, [slot, value]. */
function heldSlots(ops: Ops, lockKey: string, p: number, limit: string): [slot: number, value: string][] {
  const held: [number, string][] = [];
  for (let i = 0; i <= Number(limit) - 1; i++) {
    const v = ops.get(slotKey(lockKey, p, 'lock', i));
    if (v !== null) held.push([i, v]);
  }
  return held;
}

/** INSPECT of a semaphore's slots (its marker's `limit`): holders and the slots' waiters. */
function inspectSlots(ops: Ops, lockKey: string, p: number, limit: string, waiters: number): [number, unknown[]] {
  const holders = heldSlots(ops, lockKey, p, limit).flatMap(([slot, value]) => [
    fingerprint(value),
    identityOf(value),
    ops.pttl(slotKey(lockKey, p, 'lock', slot)),
    0,
  ]);
  for (let i = 0; i <= Number(limit) - 1; i++) waiters += ops.zcard(slotKey(lockKey, p, 'queue', i));
  return [waiters, holders];
}

export const inspect: Implementation = (ops, KEYS, ARGV) => {
  const [counter, queued] = [ops.get(KEYS[1]!), ops.zcard(KEYS[2]!)];
  const marks = KEYS[4] === undefined ? 0 : Object.values(ops.hgetall(KEYS[4])).filter((v) => Number(v) < 0).length;
  const waiters = queued - marks;
  const { limit, type } = isMark(ops, KEYS[0]!);
  if (limit !== undefined) {
    // A semaphore's marker: its slots, found with the prefix length when it is sent.
    if (ARGV[0] === undefined) return [limit, counter, waiters, []];
    const [slotWaiters, holders] = inspectSlots(ops, KEYS[0]!, Number(ARGV[0]), limit, waiters);
    return [limit, counter, slotWaiters, holders];
  }
  if (type === 'string') {
    const value = ops.get(KEYS[0]!)!;
    return ['mutex', counter, waiters, [fingerprint(value), identityOf(value), ops.pttl(KEYS[0]!), 0]];
  }
  if (type !== 'zset') return [null, counter, waiters, []];
  const now = ops.clockMs();
  const holders: unknown[] = [];
  // ZRANGEBYSCORE now +inf: the permits that have not run out, in ZRANGE order.
  for (const member of ops.zmembers(KEYS[0]!)) {
    const score = ops.zscore(KEYS[0]!, member)!;
    if (score < now) continue;
    const [value, writer] = valueOf(member);
    holders.push(fingerprint(value), identityOf(value), score - now, writer);
  }
  return [ops.get(KEYS[3]!) ?? '', counter, waiters, holders];
};

/** The zset branch of FORCE_RELEASE: the reply's head (outcome, holder, identity, writer), or a reply to return as is. */
function evictPermit(ops: Ops, KEYS: readonly string[], ARGV: readonly string[], kind: string): unknown[] {
  const wanted = ARGV[0]!;
  const now = ops.clockMs();
  heldWeight(ops, KEYS[0]!, now);
  const members = ops.zmembers(KEYS[0]!);
  let found: string | undefined;
  for (const m of members) if (wanted === '' || fingerprint(valueOf(m)[0]) === wanted) found = m;
  if (wanted === '' && members.length > 1) return [-2, null, null, null, kind, 0];
  if (found === undefined && members.length > 0) return [-1, null, null, null, kind, 0];
  if (found === undefined) return [0, null, null, null, kind, 0];
  ops.zrem(KEYS[0]!, found);
  const [value, writer] = valueOf(found);
  wake(ops, KEYS[2]!, KEYS[3]!, now, heldWeight(ops, KEYS[0]!, now), ARGV[3]!, '');
  return [1, null, fingerprint(value), identityOf(value), kind, writer];
}

/** The slots branch of FORCE_RELEASE: the reply's head, as evictPermit's; waiters woken as by a release of the slot. */
function evictSlot(ops: Ops, KEYS: readonly string[], ARGV: readonly string[], kind: string): unknown[] {
  if (ARGV[4] === undefined) return [0, null, null, null, kind, 0];
  const p = Number(ARGV[4]);
  const held = heldSlots(ops, KEYS[0]!, p, kind);
  const wanted = ARGV[0]!;
  if (wanted === '' && held.length > 1) return [-2, null, null, null, kind, 0];
  let found: [number, string] | undefined;
  for (const slot of held) if (wanted === '' || fingerprint(slot[1]) === wanted) found = slot;
  if (found === undefined && held.length > 0) return [-1, null, null, null, kind, 0];
  if (found === undefined) return [0, null, null, null, kind, 0];
  ops.del(slotKey(KEYS[0]!, p, 'lock', found[0]));
  // As a release: the slot's first waiter is woken, or another slot's (the marker goes with the last permit).
  const base = prefixOf(KEYS[0]!, p);
  const [rest, tag] = [KEYS[0]!.slice(base.length + 'lock:'.length), `#${found[0]}`];
  const head = firstFresh(ops, `${base}queue${tag}:${rest}`, `${base}queue-deadlines${tag}:${rest}`, `${base}handover${tag}:${rest}`);
  if (head !== undefined) ops.publish(ARGV[3]! + head.split('.')[0], head);
  else slotFreed(ops, base, rest, tag, (q, d, h) => firstFresh(ops, q, d, h));
  return [1, null, fingerprint(found[1]), identityOf(found[1]), kind, 0];
}

export const forceRelease: Implementation = (ops, KEYS, ARGV) => {
  const { limit, type } = isMark(ops, KEYS[0]!);
  let reply: unknown[] = [0, null, null, null, null, 0];
  if (limit !== undefined) {
    reply = evictSlot(ops, KEYS, ARGV, limit);
    if (reply[0] === -1 || reply[0] === -2) return reply;
  } else if (type === 'string') {
    const value = ops.get(KEYS[0]!)!;
    if (ARGV[0] !== '' && fingerprint(value) !== ARGV[0]) return [-1, null, null, null, 'mutex', 0];
    ops.del(KEYS[0]!);
    const head = ops.zfirst(KEYS[2]!);
    if (head !== undefined) ops.publish(ARGV[3]! + head.split('.')[0], head);
    reply = [1, null, fingerprint(value), identityOf(value), 'mutex', 0];
  } else if (type === 'zset') {
    reply = evictPermit(ops, KEYS, ARGV, ops.get(KEYS[4]!) ?? '');
    if (reply[0] === -1 || reply[0] === -2) return reply;
  }
  if (ARGV[1] === '') return reply;
  const counter = Number(ops.get(KEYS[1]!) ?? '0');
  const floor = Number(ARGV[1]);
  const text = (counter >= floor ? counter + 1 : floor).toFixed(0);
  ops.set(KEYS[1]!, text, ARGV[2]!);
  reply[1] = text;
  return reply;
};
