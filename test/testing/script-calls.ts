import {
  ACQUIRE,
  CONFIRM_TOKEN,
  EXTEND,
  FENCED_ACCESS,
  INSPECT,
  LEAVE_QUEUE,
  RELEASE,
  SET_NX,
  type Script,
} from '../../lib/core/scripts.js';

/** The two servers of the differential test. */
export type Side = 'redis' | 'memory';

export interface Command {
  readonly script: Script | typeof SET_NX;
  readonly keys: readonly string[];
  /** Drawn before, not inside: the sides differ only in a fencing token each issued. */
  readonly args: (side: Side) => readonly (string | number)[];
}

/** One step of the random sequence: its commands run in order and at once (a MULTI on Redis). */
export interface Call {
  readonly kind: string;
  readonly resources: readonly string[];
  readonly commands: readonly Command[];
  /** Ms to wait after the step: long enough for a 2 ms queue entry it made to be stale on both sides. */
  readonly settle?: number;
}

/** Every script of lib/core/scripts.ts, and the plain protocol's SET NX, with the variants of their arguments. */
export const KINDS = [
  'acquire',
  'acquire',
  'acquire',
  'set-nx',
  'stale-head',
  'confirm',
  'extend',
  'release',
  'release',
  'undo',
  'leave',
  'inspect',
  'fenced',
] as const;

/** mulberry32: a small seeded generator, so that a failure can be replayed. */
export function seeded(initialSeed: number): () => number {
  let seed = initialSeed;
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VALUES = ['v1', 'v2', 'v3'];
/** Waiters of two clients: a release wakes the first waiter on its client's channel. */
const WAITERS = ['c1.w1', 'c1.w2', 'c2.w3', 'c2.w4'];
export const WAKE_CHANNELS = ['d:wake:c1', 'd:wake:c2'];
/** The first-attempt time of a waiter whose host's clock is a minute ahead: the scripts queue it at the node's clock + 1 s. */
const AHEAD = 60_000;

/**
 * Draws the random calls of the differential test. Queue positions come from a
 * small set of first-attempt times (ties are ordered by waiter id), near a
 * `base` renewed every 50 steps, so that no position falls near the node's
 * clock - 1 s, where the two sides could clamp it differently.
 */
export class CallDrawer {
  /** The last fencing token each side issued. */
  readonly tokens: Record<Side, number> = { redis: 0, memory: 0 };
  private base = Date.now();

  constructor(private readonly random: () => number) {}

  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.random() * list.length)]!;
  }

  draw(step: number): Call {
    if (step % 50 === 0) this.base = Date.now();
    const all = ['a', 'b', 'c'].filter(() => this.random() < 0.5);
    const resources = all.length ? all : [this.pick(['a', 'b', 'c'])];
    const kind = this.pick(KINDS);
    return { kind, resources, ...this.commands(kind, resources) };
  }

  private commands(kind: (typeof KINDS)[number], resources: readonly string[]): Omit<Call, 'kind' | 'resources'> {
    const k = keysOf(resources);
    const value = this.pick(VALUES);
    const r = resources[0]!;
    switch (kind) {
      case 'acquire':
        return { commands: [this.acquire(k, value, this.random() < 0.6, this.random() < 0.7)] };
      case 'set-nx':
        return { commands: [{ script: SET_NX, keys: [`d:lock:${r}`], args: constant([value, this.pick([30_000, 100_000])]) }] };
      case 'stale-head':
        return this.staleHead(k);
      case 'confirm': {
        const above = this.pick([0, 1, 5]);
        const args = (side: Side) => [value, String(this.tokens[side] + above), resources.length, 60_000];
        return { commands: [{ script: CONFIRM_TOKEN, keys: [...k.locks, ...k.fences], args }] };
      }
      case 'extend':
        return { commands: [{ script: EXTEND, keys: k.locks, args: constant([value, this.pick([30_000, 100_000])]) }] };
      case 'release':
        return { commands: [this.release(k, value, this.random() < 0.7 ? this.pick(['', ...WAITERS]) : undefined)] };
      case 'undo':
        // A waiter's failed attempt undone: it keeps its place and is not woken by its own undo.
        return { commands: [{ script: RELEASE, keys: [...k.locks, ...k.queues], args: constant([value, 'd:wake:', '', this.pick(WAITERS)]) }] };
      case 'leave':
        return { commands: [{ script: LEAVE_QUEUE, keys: k.queues, args: constant([this.pick(WAITERS), 'd:wake:']) }] };
      case 'inspect':
        return { commands: [{ script: INSPECT, keys: [`d:lock:${r}`, `d:fence:${r}`, `d:queue:${r}`], args: constant([]) }] };
      case 'fenced':
        return { commands: [this.fenced(r)] };
    }
  }

  /** `leaving`: the holder's waiter id ('' when it never queued); undefined: fair waiting off. */
  private release(k: Keys, value: string, leaving: string | undefined): Command {
    if (leaving === undefined) return { script: RELEASE, keys: k.locks, args: constant([value]) };
    return { script: RELEASE, keys: [...k.locks, ...k.queues], args: constant([value, 'd:wake:', leaving]) };
  }

  private acquire(k: Keys, value: string, fencing: boolean, fair: boolean, queue?: { waiter: string; entryTtl: number }): Command {
    const keys = [...k.locks, ...(fencing ? k.fences : []), ...(fair ? k.queues : [])];
    const waiter = queue?.waiter ?? (fair ? this.pick([...WAITERS, '-']) : '');
    const since = this.base + (waiter === 'c2.w4' ? AHEAD : this.pick([0, 0, 1, 2]));
    const spec = waiter === '' || waiter === '-' ? waiter : `${waiter} ${since} ${queue?.entryTtl ?? 20_000}`;
    // The floor: the acquiring client's clock in µs, some a little ahead of others.
    const args = [value, this.pick([30_000, 100_000]), spec, ...(fencing ? [60_000, (this.base + this.pick([0, 7])) * 1000] : [])];
    return { script: ACQUIRE, keys, args: constant(args) };
  }

  /**
   * A waiter queues with a 2 ms entry and a second one with a 20 s entry at once
   * (the second keeps the queue alive); after the wait, the first is a stale
   * head that the next acquire of a free resource drops.
   */
  private staleHead(k: Keys): Omit<Call, 'kind' | 'resources'> {
    const [first, second] = [this.pick(WAITERS.slice(0, 2)), this.pick(WAITERS.slice(2))];
    const fencing = this.random() < 0.5;
    return {
      commands: [
        this.acquire(k, this.pick(VALUES), fencing, true, { waiter: first, entryTtl: 2 }),
        this.acquire(k, this.pick(VALUES), fencing, true, { waiter: second, entryTtl: 20_000 }),
      ],
      settle: 5,
    };
  }

  /** Tokens from a small set, and sometimes a µs clock reading as the lock client issues them. */
  private fenced(r: string): Command {
    const token = this.random() < 0.8 ? this.pick([1, 2, 3, 4]) : (this.base + this.pick([0, 7])) * 1000;
    const op = this.pick(['get', 'set', 'del']);
    const args = op === 'set' ? [token, op, this.pick(VALUES)] : [token, op];
    return { script: FENCED_ACCESS, keys: [`d:data:${r}`, `d:token:${r}`], args: constant(args) };
  }
}

interface Keys {
  readonly locks: string[];
  readonly fences: string[];
  readonly queues: string[];
}

function keysOf(resources: readonly string[]): Keys {
  return {
    locks: resources.map((r) => `d:lock:${r}`),
    fences: resources.map((r) => `d:fence:${r}`),
    queues: resources.flatMap((r) => [`d:queue:${r}`, `d:queue-deadlines:${r}`]),
  };
}

function constant(args: readonly (string | number)[]): () => readonly (string | number)[] {
  return () => args;
}
