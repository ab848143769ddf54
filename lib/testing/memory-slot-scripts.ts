import type { Ops } from './memory-data.js';

// A semaphore's Lua (lib/core/slot-scripts.ts) as JavaScript, step by step, for
// MemoryRedisNode: the functions ACQUIRE and RELEASE paste in (SLOT_LUA), and
// SLOT_EXTEND; with the reading of a key's prefix that every script building a
// resource's keys from one of them shares. KEYS[i] of the Lua is keys[i - 1] here.

type Implementation = (ops: Ops, keys: readonly string[], argv: readonly string[]) => unknown;

/** The key prefix: the first `prefixLength` bytes of a key (as characters when they are all ASCII, the usual case). */
export function prefixOf(key: string, prefixLength: number): string {
  const head = key.slice(0, prefixLength);
  return Buffer.byteLength(head) === head.length ? head : Buffer.from(key).subarray(0, prefixLength).toString();
}

/** GRANT's firstFresh (lib/core/grant-lua.ts): the first waiter whose entry is fresh (or `keep`), stale ones before it dropped. */
export function firstFresh(ops: Ops, q: string, d: string, h: string, keep?: string): string | undefined {
  for (;;) {
    const head = ops.zfirst(q);
    if (head === undefined || head === keep || Number(ops.hget(d, head) ?? '0') >= ops.clockMs()) return head;
    ops.zrem(q, head);
    ops.hdel(d, head);
    ops.hdel(h, head);
  }
}

/** isMark: the marker's limit, if `key` holds a semaphore's marker ('#<limit>'), and the key's type. */
export function isMark(ops: Ops, key: string): { limit?: string; type: string } {
  const type = ops.type(key);
  if (type !== 'string') return { type };
  const v = ops.get(key)!;
  return v.startsWith('#') ? { limit: v.slice(1), type } : { type };
}

/** keepMark: the marker, found living less than `ttl` ms, is set to '#<limit>' for twice that, over itself or nothing only. */
export function keepMark(ops: Ops, mark: string, limit: string, ttl: string): void {
  if (ops.pttl(mark) >= Number(ttl)) return;
  const found = isMark(ops, mark);
  if (found.limit !== undefined || found.type === 'none') ops.set(mark, `#${limit}`, String(2 * Number(ttl)));
}

/** otherKind: how the resource is used if not as this semaphore (another limit, 'mutex', a read-write lock's kind); undefined when free for it. */
export function otherKind(ops: Ops, base: string, rest: string, limit: string): string | undefined {
  const found = isMark(ops, `${base}lock:${rest}`);
  if (found.limit !== undefined) return found.limit !== limit ? found.limit : undefined;
  if (found.type === 'string') return 'mutex';
  if (found.type !== 'none') return ops.get(`${base}kind:${rest}`) ?? 'rw';
  return undefined;
}

/** freeSlots: the other slots this node has free with nobody queued for them (a few looked at, from the next on). */
export function freeSlots(ops: Ops, base: string, rest: string, tag: string, limit: string): number[] {
  const [s, l] = [Number(tag.slice(1)), Number(limit)];
  const free: number[] = [];
  for (let j = 1; j <= Math.min(l - 1, 8); j++) {
    const k = (s + j) % l;
    if (ops.exists(`${base}lock#${k}:${rest}`) === 0 && ops.zcard(`${base}queue#${k}:${rest}`) === 0) free.push(k);
  }
  return free;
}

/**
 * shorterQueues: with no slot free, the other slots (a few looked at, from the next on)
 * whose queue has at least 3 fewer entries before `place` than `waiter` has before it in
 * the queue of slot `tag`, where it just queued.
 */
export function shorterQueues(ops: Ops, base: string, rest: string, tag: string, limit: string, waiter: string, place: string): number[] {
  const own = ops.zmembers(`${base}queue${tag}:${rest}`).indexOf(waiter);
  if (own < 3) return [];
  const [s, l] = [Number(tag.slice(1)), Number(limit)];
  const named: number[] = [];
  for (let j = 1; j <= Math.min(l - 1, 8); j++) {
    const k = (s + j) % l;
    if (ops.zcountBelow(`${base}queue#${k}:${rest}`, Number(place)) <= own - 3) named.push(k);
  }
  return named;
}

/**
 * slotFreed: slot `tag` was released with nobody queued for it. The first waiter of
 * another slot's queue (a few looked at, the limit read from the marker) is woken
 * with this slot's number ('<waiter> #<slot>'); with nobody there either and no slot
 * held here, the marker is deleted.
 */
export function slotFreed(
  ops: Ops,
  base: string,
  rest: string,
  tag: string,
  firstFresh: (q: string, d: string, h: string) => string | undefined,
): void {
  const mark = `${base}lock:${rest}`;
  const { limit } = isMark(ops, mark);
  const l = Number(limit ?? '1');
  const s = tag.slice(1);
  for (let j = 1; j <= Math.min(l - 1, 8); j++) {
    const k = `#${(Number(s) + j) % l}:${rest}`;
    const other = firstFresh(`${base}queue${k}`, `${base}queue-deadlines${k}`, `${base}handover${k}`);
    if (other !== undefined) {
      ops.publish(`${base}wake:${other.split('.')[0]}`, `${other} #${s}`);
      return;
    }
  }
  for (let i = 0; i < l; i++) if (ops.exists(`${base}lock#${i}:${rest}`) === 1) return;
  if (limit !== undefined) ops.del(mark);
}

export const slotExtend: Implementation = (ops, KEYS, ARGV) => {
  if (ops.get(KEYS[0]!) !== ARGV[0]) return 0;
  ops.pexpire(KEYS[0]!, ARGV[1]!);
  keepMark(ops, KEYS[1]!, ARGV[2]!, ARGV[1]!);
  return 1;
};
