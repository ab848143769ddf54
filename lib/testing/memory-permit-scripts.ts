import type { Ops } from './memory-data.js';

// The permit scripts (lib/core/permit-scripts.ts) as JavaScript, step by step,
// for MemoryRedisNode: KEYS[i] of the Lua is keys[i - 1] here.

type Implementation = (ops: Ops, keys: readonly string[], argv: readonly string[]) => unknown;

/** A read-write lock's limit: a writer weighs all of it, a reader 1 (see HELPERS). */
const RW_LIMIT = 1e9;
const weight = (member: string): number => (member.endsWith(':w') ? RW_LIMIT : 1);

/** A queue key gets at least `ms` more to live, never less; found short, twice `ms` (see AT_LEAST in permit-scripts.ts). */
export function atLeast(ops: Ops, key: string, ms: string): void {
  if (ops.pttl(key) < Number(ms)) ops.pexpire(key, String(2 * Number(ms)));
}

/** The weight of the live holders; expired ones are dropped first. */
export function heldWeight(ops: Ops, key: string, now: number): number {
  ops.zremBelow(key, now);
  return ops.zmembers(key).reduce((used, m) => used + weight(m), 0);
}

/** The set and its kind outlive a permit of `ttl` ms: found shorter, both get twice that (see HELPERS). */
function keepFor(ops: Ops, key: string, kindKey: string, kind: string, ttl: number): void {
  if (ops.pttl(key) >= ttl) return;
  ops.pexpire(key, String(2 * ttl));
  ops.set(kindKey, kind, String(2 * ttl));
}

/** A queue entry's state: a waiter, a holder's mark (admitted here) or stale (see permit-scripts.ts). */
function entryState(ops: Ops, d: string, id: string, now: number): 'fresh' | 'held' | 'stale' {
  const v = Number(ops.hget(d, id) ?? '0');
  if (v >= now) return 'fresh';
  return v < 0 && -v >= now ? 'held' : 'stale';
}

/** What a release hands permits over with (see WAKE): the holders' key, the hand-overs, the kind key and kind, the fence counter if sent. */
export interface Hand {
  readonly key: string;
  readonly handover: string;
  readonly kindKey: string;
  readonly kind: string;
  readonly fence: string | undefined;
}

/** WAKE's handOver: the permit handed over to waiter `id`, and the message saying so; undefined when its entry carries none. */
function handOver(ops: Ops, d: string, id: string, now: number, hand: Hand): string | undefined {
  const match = /^(\S+) (\S+) (\S+) (\S+) (\S+) (.*)$/s.exec(ops.hget(hand.handover, id) ?? '');
  if (!match) return undefined;
  const [, ttl, attempt, retention, floor, kind, member] = match as unknown as [string, string, string, string, string, string, string];
  if (kind !== hand.kind || (retention !== '0' && hand.fence === undefined)) return undefined;
  ops.zadd(hand.key, now + Number(ttl), member);
  ops.hset(d, id, String(-(now + Number(ttl))));
  keepFor(ops, hand.key, hand.kindKey, hand.kind, Number(ttl));
  const token = retention === '0' ? '0' : String(fenceToken(ops, hand.fence!, retention, floor, false));
  return `${id} ${attempt} ${token}`;
}

export function wake(ops: Ops, q: string, d: string, now: number, used: number, prefix: string, skip: string, hand?: Hand): void {
  let ahead = 0;
  for (const id of ops.zmembers(q)) {
    if (entryState(ops, d, id, now) !== 'fresh') continue;
    ahead += weight(id);
    if (used + ahead > RW_LIMIT) return;
    if (id !== skip) ops.publish(prefix + id.split('.')[0], (hand && handOver(ops, d, id, now, hand)) ?? id);
  }
}

/** Whether the free permits reach this caller after the fresh waiters ahead of it (stale ones are dropped on the way). */
function fitsAfterQueue(
  ops: Ops,
  [q, d, h]: [string, string, string | undefined],
  waiter: string | undefined,
  now: number,
  room: number,
): boolean {
  let ahead = 0;
  for (const id of ops.zmembers(q)) {
    if (id === waiter) break;
    const state = entryState(ops, d, id, now);
    if (state === 'fresh') {
      ahead += weight(id);
      if (ahead > room) return false;
    } else if (state === 'stale') {
      ops.zrem(q, id);
      ops.hdel(d, id);
      if (h !== undefined) ops.hdel(h, id);
    }
  }
  return true;
}

/** Queued at its place (kept if it has one); `heldFor`: admitted, marked as a holder for that long. */
/** `handOver`: what a refused waiter leaves in the hand-overs `h`, when sent (see WAKE). */
function joinQueue(
  ops: Ops,
  [q, d, h]: [string, string, string | undefined],
  spec: string[],
  now: number,
  heldFor: number | undefined,
  handOver: string,
): void {
  const [waiter, since, entryTtl] = spec as [string, string, string];
  const at = Number(since);
  const position = at < now - 1000 ? String(now - 1000) : at > now + 1000 ? String(now + 1000) : since;
  ops.zaddNx(q, position, waiter);
  ops.hset(d, waiter, String(heldFor === undefined ? now + Number(entryTtl) : -(now + heldFor)));
  atLeast(ops, q, entryTtl);
  atLeast(ops, d, entryTtl);
  if (h !== undefined && heldFor === undefined) {
    ops.hset(h, waiter, handOver);
    atLeast(ops, h, entryTtl);
  }
}

function fenceToken(ops: Ops, fence: string, retention: string, floorText: string, mine: boolean): number {
  if (mine) return Number(ops.get(fence) ?? '0');
  const c = ops.get(fence);
  ops.set(fence, floorText, retention);
  let token = Number(floorText);
  if (c !== null && Number(c) >= token) {
    token = Number(c) + 1;
    ops.set(fence, token.toFixed(0), retention);
  }
  return token;
}

const permitAcquire: Implementation = (ops, KEYS, ARGV) => {
  const [key, kindKey] = KEYS as [string, string];
  const [member, ttl, kind, spec, retention, floor] = ARGV as [string, string, string, string, string?, string?];
  const queue: [string, string, string | undefined] =
    retention !== undefined ? [KEYS[3]!, KEYS[4]!, KEYS[5]] : [KEYS[2]!, KEYS[3]!, KEYS[4]];
  const fair = spec !== '';
  const now = ops.clockMs();
  // A string where the holders' set would be: a semaphore's marker says so, typed; a mutex's raises WRONGTYPE.
  try {
    ops.zremBelow(key, now);
  } catch (error) {
    const v = ops.get(key);
    if (v?.startsWith('#')) throw new Error(`WRONGKIND ${v.slice(1)}`, { cause: error });
    throw error;
  }
  const used = heldWeight(ops, key, now);
  const current = ops.get(kindKey);
  if (current !== null && current !== kind && used > 0) throw new Error(`WRONGKIND ${current}`);
  const mine = ops.zscore(key, member) !== undefined;
  const w = weight(member);
  const parts = fair && spec !== '-' ? spec.split(' ') : undefined;
  let admitted = mine || used + w <= RW_LIMIT;
  if (fair && admitted && !mine) admitted = fitsAfterQueue(ops, queue, parts?.[0], now, RW_LIMIT - used - w);
  // A refused waiter's hand-over: ttl, attempt, retention and floor ('0 0' with fencing off), kind, member.
  if (parts)
    joinQueue(
      ops,
      queue,
      parts,
      now,
      admitted ? Number(ttl) : undefined,
      `${ttl} ${parts[3]} ${retention ?? '0'} ${floor ?? '0'} ${kind} ${member}`,
    );
  if (!admitted) return [0, -1];
  ops.zadd(key, now + Number(ttl), member);
  keepFor(ops, key, kindKey, kind, Number(ttl));
  if (retention === undefined) return [1, 0];
  return [1, fenceToken(ops, KEYS[2]!, retention, floor!, mine)];
};

// On a string key, Ops' sorted-set commands throw WRONGTYPE, as Redis's do.
const held = (ops: Ops, key: string, member: string, now: number): boolean => {
  const score = ops.zscore(key, member);
  return score !== undefined && score >= now;
};

const permitConfirm: Implementation = (ops, KEYS, ARGV) => {
  if (!held(ops, KEYS[0]!, ARGV[0]!, ops.clockMs())) return 0;
  if (Number(ops.get(KEYS[1]!) ?? '0') < Number(ARGV[1])) ops.set(KEYS[1]!, ARGV[1]!, ARGV[2]!);
  return 1;
};

const permitExtend: Implementation = (ops, KEYS, ARGV) => {
  const now = ops.clockMs();
  if (!held(ops, KEYS[0]!, ARGV[0]!, now)) return 0;
  ops.zadd(KEYS[0]!, now + Number(ARGV[1]), ARGV[0]!, true);
  keepFor(ops, KEYS[0]!, KEYS[1]!, ARGV[2]!, Number(ARGV[1]));
  return 1;
};

const permitRelease: Implementation = (ops, KEYS, ARGV) => {
  const removed = ARGV[0] !== '' ? ops.zrem(KEYS[0]!, ARGV[0]!) : 0;
  if (ARGV.length < 3) return removed;
  const [q, d] = [KEYS[1]!, KEYS[2]!];
  const now = ops.clockMs();
  let left = 0;
  if (ARGV[3] !== '') {
    left = ops.zrem(q, ARGV[3]!);
    ops.hdel(d, ARGV[3]!);
    if (KEYS[3] !== undefined) ops.hdel(KEYS[3], ARGV[3]!);
  }
  const [undone, entryTtl] = [ARGV[4]!, ARGV[5]!];
  if (undone !== '' && ops.zscore(q, undone) !== undefined) {
    ops.hset(d, undone, String(now + Number(entryTtl)));
    atLeast(ops, q, entryTtl);
    atLeast(ops, d, entryTtl);
  }
  if (removed === 0 && left === 0) return 0;
  const hand = KEYS[4] === undefined ? undefined : { key: KEYS[0]!, handover: KEYS[3]!, kindKey: KEYS[4], kind: ARGV[1]!, fence: KEYS[5] };
  wake(ops, q, d, now, heldWeight(ops, KEYS[0]!, now), ARGV[2]!, ARGV[4]!, hand);
  return removed;
};

/** The twins by script name (memory-scripts.ts registers them beside the mutex's). */
export const PERMIT_IMPLEMENTATIONS = { permitAcquire, permitConfirm, permitExtend, permitRelease } as const;
