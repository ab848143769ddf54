/**
 * The keyspace of an in-memory Redis server and the commands on it: keys with
 * expiry holding strings, sorted sets or hashes, read and written at one
 * instant (`Ops`), as a script or a single command sees them.
 */

/** A key's value: the three Redis types the scripts use. */
type Value =
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'zset'; readonly scores: Map<string, number> }
  | { readonly kind: 'hash'; readonly fields: Map<string, string> };

export interface Entry {
  value: Value;
  /** Clock time (ms) after which the key is gone; none: no expiry. */
  expireAt?: number;
}

/** What the commands act on: the keys of one server, and its PUBLISH. */
export interface Keyspace {
  readonly data: Map<string, Entry>;
  publish(channel: string, message: string): number;
}

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';
const NOT_INTEGER = 'ERR value is not an integer or out of range';

/**
 * The commands scripts call, on one server at one instant: like inside a Redis
 * script, the clock does not move while it runs, so no key expires midway.
 */
export class Ops {
  constructor(
    private readonly server: Keyspace,
    readonly time: number,
  ) {}

  private entry(key: string): Entry | undefined {
    const entry = this.server.data.get(key);
    if (entry?.expireAt !== undefined && this.time > entry.expireAt) {
      this.server.data.delete(key);
      return undefined;
    }
    return entry;
  }

  private typed<K extends Value['kind']>(key: string, kind: K): Extract<Value, { kind: K }> | undefined {
    const entry = this.entry(key);
    if (!entry) return undefined;
    if (entry.value.kind !== kind) throw new Error(WRONGTYPE);
    return entry.value as Extract<Value, { kind: K }>;
  }

  /** `TIME` in ms, as the scripts compute it: seconds * 1000 + floor(microseconds / 1000). */
  clockMs(): number {
    return Math.floor(this.time);
  }

  get(key: string): string | null {
    return this.typed(key, 'string')?.value ?? null;
  }

  /** SET key value [PX ms]: replaces any value and any previous ttl. */
  set(key: string, value: string, px?: string): void {
    let expireAt: number | undefined;
    if (px !== undefined) {
      const ms = integer(px);
      if (ms <= 0) throw new Error("ERR invalid expire time in 'set' command");
      expireAt = this.time + ms;
    }
    this.server.data.set(key, { value: { kind: 'string', value }, expireAt });
  }

  del(key: string): number {
    const existed = this.entry(key) !== undefined;
    this.server.data.delete(key);
    return existed ? 1 : 0;
  }

  exists(key: string): number {
    return this.entry(key) ? 1 : 0;
  }

  pexpire(key: string, ms: string): number {
    const entry = this.entry(key);
    const px = integer(ms);
    if (!entry) return 0;
    if (px <= 0) this.server.data.delete(key);
    else entry.expireAt = this.time + px;
    return 1;
  }

  pttl(key: string): number {
    const entry = this.entry(key);
    if (!entry) return -2;
    if (entry.expireAt === undefined) return -1;
    return Math.round(entry.expireAt - this.time);
  }

  /** ZADD key NX score member. */
  zaddNx(key: string, score: string, member: string): number {
    const value = Number(score);
    if (score.trim() === '' || Number.isNaN(value)) throw new Error('ERR value is not a valid float');
    let zset = this.typed(key, 'zset');
    if (!zset) {
      zset = { kind: 'zset', scores: new Map() };
      this.server.data.set(key, { value: zset });
    }
    if (zset.scores.has(member)) return 0;
    zset.scores.set(member, value);
    return 1;
  }

  /** ZADD key [XX] score member: sets the member's score (XX: only an existing member). */
  zadd(key: string, score: number, member: string, xx = false): number {
    let zset = this.typed(key, 'zset');
    if (xx && !zset?.scores.has(member)) return 0;
    if (!zset) {
      zset = { kind: 'zset', scores: new Map() };
      this.server.data.set(key, { value: zset });
    }
    const added = zset.scores.has(member) ? 0 : 1;
    zset.scores.set(member, score);
    return added;
  }

  zscore(key: string, member: string): number | undefined {
    return this.typed(key, 'zset')?.scores.get(member);
  }

  /** ZREMRANGEBYSCORE key -inf (below: drops every member scored below `below`. */
  zremBelow(key: string, below: number): void {
    const zset = this.typed(key, 'zset');
    if (!zset) return;
    for (const [member, score] of zset.scores) if (score < below) zset.scores.delete(member);
    if (zset.scores.size === 0) this.server.data.delete(key);
  }

  zrem(key: string, member: string): number {
    const zset = this.typed(key, 'zset');
    if (!zset?.scores.delete(member)) return 0;
    if (zset.scores.size === 0) this.server.data.delete(key); // Redis keeps no empty sets
    return 1;
  }

  /** `ZRANGE key 0 0`'s only member: the lowest score, ties by member bytes. */
  zfirst(key: string): string | undefined {
    const zset = this.typed(key, 'zset');
    let first: [string, number] | undefined;
    for (const [member, score] of zset?.scores ?? []) {
      if (!first || score < first[1] || (score === first[1] && Buffer.compare(Buffer.from(member), Buffer.from(first[0])) < 0)) {
        first = [member, score];
      }
    }
    return first?.[0];
  }

  /** ZCOUNT key -inf (below: how many members are scored below `below`. */
  zcountBelow(key: string, below: number): number {
    let count = 0;
    for (const score of this.typed(key, 'zset')?.scores.values() ?? []) if (score < below) count++;
    return count;
  }

  zcard(key: string): number {
    return this.typed(key, 'zset')?.scores.size ?? 0;
  }

  /** Members in ZRANGE order: by score, ties by member bytes. */
  zmembers(key: string): string[] {
    const zset = this.typed(key, 'zset');
    return [...(zset?.scores ?? [])]
      .sort(([a, x], [b, y]) => (x !== y ? x - y : Buffer.compare(Buffer.from(a), Buffer.from(b))))
      .map(([member]) => member);
  }

  hgetall(key: string): Record<string, string> {
    return Object.fromEntries(this.typed(key, 'hash')?.fields ?? []);
  }

  type(key: string): 'string' | 'zset' | 'hash' | 'none' {
    return this.entry(key)?.value.kind ?? 'none';
  }

  hset(key: string, field: string, value: string): number {
    let hash = this.typed(key, 'hash');
    if (!hash) {
      hash = { kind: 'hash', fields: new Map() };
      this.server.data.set(key, { value: hash });
    }
    const added = hash.fields.has(field) ? 0 : 1;
    hash.fields.set(field, value);
    return added;
  }

  hget(key: string, field: string): string | null {
    return this.typed(key, 'hash')?.fields.get(field) ?? null;
  }

  hdel(key: string, field: string): number {
    const hash = this.typed(key, 'hash');
    if (!hash?.fields.delete(field)) return 0;
    if (hash.fields.size === 0) this.server.data.delete(key);
    return 1;
  }

  publish(channel: string, message: string): number {
    return this.server.publish(channel, message);
  }

  keys(pattern: string): string[] {
    const match = globToRegExp(pattern);
    return [...this.server.data.keys()].filter((key) => this.entry(key) && match.test(key));
  }
}

/** Redis-style integer argument parsing (strict). */
function integer(text: string): number {
  if (!/^-?\d+$/.test(text)) throw new Error(NOT_INTEGER);
  return Number(text);
}

/** A Redis KEYS pattern: `*`, `?`, `[abc]`, `[^a]`, `[a-z]`, `\x`. */
function globToRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') source += '[\\s\\S]*';
    else if (c === '?') source += '[\\s\\S]';
    else if (c === '\\' && i + 1 < pattern.length) source += escape(pattern[++i]!);
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) {
        source += '\\[';
        continue;
      }
      let body = pattern.slice(i + 1, end);
      const negate = body.startsWith('^');
      if (negate) body = body.slice(1);
      source += `[${negate ? '^' : ''}${body.replace(/[\]\\]/g, '\\$&')}]`;
      i = end;
    } else source += escape(c);
  }
  return new RegExp(`^${source}$`);
}

function escape(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
