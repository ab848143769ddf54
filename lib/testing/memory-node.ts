import { EventEmitter } from 'node:events';
import { createHash, randomBytes } from 'node:crypto';
import { ACQUIRE, CONFIRM_TOKEN, EXTEND, FENCED_ACCESS, INSPECT, LEAVE_QUEUE, RELEASE, type Script } from '../core/scripts.js';

/** Settings of one in-memory node. */
export interface MemoryRedisNodeOptions {
  /**
   * The node's clock, ms since the epoch: key expiry, the script clock (Redis
   * `TIME`) and uptime follow it. Default `Date.now`, so fake timers that mock
   * `Date` move expiry too.
   */
  readonly now?: () => number;
  /** Delay before each reply, ms (0: the reply is a resolved promise). Default 0. */
  readonly latency?: number;
  /** Host part of the node's label (`<host>:<port>/0`). Default `'memory'`; ports are unique per process. */
  readonly host?: string;
}

/** Connection states an ioredis client reports in `status`, as far as this stand-in uses them. */
export type MemoryNodeStatus = 'ready' | 'reconnecting' | 'end';

type Value =
  | { readonly kind: 'string'; readonly value: string }
  | { readonly kind: 'zset'; readonly scores: Map<string, number> }
  | { readonly kind: 'hash'; readonly fields: Map<string, string> };

interface Entry {
  value: Value;
  /** Clock time (ms) after which the key is gone; none: no expiry. */
  expireAt?: number;
}

type Arg = string | number | Buffer;

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';
const NOT_INTEGER = 'ERR value is not an integer or out of range';

/** A Redis server kept in this process: keys with expiry, strings, sorted sets, hashes, pub/sub, the script cache. */
class MemoryServer {
  readonly data = new Map<string, Entry>();
  /** SHAs loaded by EVAL (EVALSHA answers NOSCRIPT for the others, as Redis does). */
  readonly loaded = new Set<string>();
  readonly connections = new Set<MemoryRedisNode>();
  runId = randomBytes(20).toString('hex');
  startedAt: number;
  paused = false;
  down = false;
  private readonly queue: { run: () => void; fail: (error: Error) => void }[] = [];
  private commands = 0;

  readonly label: string;

  constructor(
    readonly now: () => number,
    readonly latency: number,
    readonly host: string,
    readonly port: number,
  ) {
    this.label = `${host}:${port}`;
    // A node stands for a server that has been up for a while: the restart
    // guard does not exclude it until `restart()` is called.
    this.startedAt = now() - 86_400_000;
  }

  /** Runs a command atomically when the server takes it, and answers after the latency. */
  submit<T>(command: (ops: Ops) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const run = () => {
        let reply: T;
        try {
          if (++this.commands % 1000 === 0) this.sweep();
          reply = command(new Ops(this, this.now()));
        } catch (error) {
          return this.answer(() => reject(error));
        }
        this.answer(() => resolve(reply));
      };
      if (this.down) return reject(this.downError());
      if (this.paused) this.queue.push({ run, fail: reject });
      else run();
    });
  }

  downError(): Error {
    return new Error(`Connection is closed: ${this.label} is down (simulated by MemoryRedisNode.down())`);
  }

  private answer(deliver: () => void): void {
    if (this.latency > 0) setTimeout(deliver, this.latency);
    else deliver();
  }

  resume(): void {
    this.paused = false;
    for (const { run } of this.queue.splice(0)) run();
  }

  takeDown(): void {
    if (this.down) return;
    this.down = true;
    // Commands waiting on a paused node die with its connections.
    for (const { fail } of this.queue.splice(0)) fail(this.downError());
    for (const connection of this.connections) connection.serverDown(this.downError());
  }

  bringUp(): void {
    if (!this.down) return;
    this.down = false;
    for (const connection of this.connections) connection.serverUp();
  }

  publish(channel: string, message: string): number {
    let receivers = 0;
    for (const connection of this.connections) {
      if (connection.deliver(channel, message)) receivers++;
    }
    return receivers;
  }

  /** Drops expired keys (Redis does this in the background too). */
  sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.data) if (entry.expireAt !== undefined && now > entry.expireAt) this.data.delete(key);
  }
}

/**
 * The commands scripts call, on one server at one instant: like inside a Redis
 * script, the clock does not move while it runs, so no key expires midway.
 */
class Ops {
  constructor(
    private readonly server: MemoryServer,
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

type Implementation = (ops: Ops, keys: readonly string[], argv: readonly string[]) => unknown;

/**
 * The library's Lua scripts as JavaScript with the same semantics, step by
 * step (the Lua is in lib/core/scripts.ts). Lua's 1-based KEYS[i] is keys[i - 1].
 * The shared behavioural suite runs against both, so they cannot drift apart
 * unnoticed; `IMPLEMENTED_SHAS` names the Lua text each was written from.
 */
const IMPLEMENTATIONS = new Map<Script, Implementation>([
  [
    ACQUIRE,
    (ops, KEYS, ARGV) => {
      const value = ARGV[0]!;
      const spec = ARGV[2]!;
      const fair = spec !== '';
      const fencing = ARGV[3] !== undefined;
      const n = KEYS.length / (1 + (fencing ? 1 : 0) + (fair ? 2 : 0));
      const q0 = fencing ? 2 * n : n;
      // '-': fair, without joining the queue; else 'waiter-id first-attempt-ms entry-ttl-ms'.
      const [waiter, since, entryTtl] = spec === '-' ? [] : spec.split(' ');
      // A run that finds all keys with this value took them already (a resent
      // command, or an earlier attempt whose undo was lost): they are set again below.
      let mine = 0;
      let blocker: number | undefined;
      for (let i = 0; i < n; i++) {
        const v = ops.get(KEYS[i]!);
        if (v === value) mine++;
        else if (v !== null) {
          blocker = i;
          break;
        }
      }
      // A free resource is reserved for the longest waiter whose entry is still fresh.
      // (The Lua takes a single key with SET NX first and undoes it when reserved: the same outcome.)
      let reserved = false;
      if (fair && blocker === undefined && mine < n) {
        for (let i = 1; i <= n && !reserved; i++) {
          const q = KEYS[q0 + 2 * i - 2]!;
          const d = KEYS[q0 + 2 * i - 1]!;
          for (;;) {
            const head = ops.zfirst(q);
            if (head === undefined || head === waiter) break;
            if ((luaNumber(ops.hget(d, head)) ?? 0) >= ops.clockMs()) {
              reserved = true;
              break;
            }
            ops.zrem(q, head);
            ops.hdel(d, head);
          }
        }
      }
      if (blocker !== undefined || reserved) {
        if (fair && waiter !== undefined) {
          const ttl = Number(entryTtl);
          // Within a second of the node's clock, as the script does.
          const now = ops.clockMs();
          const at = Number(since);
          const position = at < now - 1000 ? String(now - 1000) : at > now + 1000 ? String(now + 1000) : since!;
          for (let i = 1; i <= n; i++) {
            const q = KEYS[q0 + 2 * i - 2]!;
            const d = KEYS[q0 + 2 * i - 1]!;
            ops.zaddNx(q, position, waiter);
            ops.hset(d, waiter, String(ops.clockMs() + ttl));
            ops.pexpire(q, entryTtl!);
            ops.pexpire(d, entryTtl!);
          }
        }
        if (blocker !== undefined) return [0, ops.pttl(KEYS[blocker]!)];
        return [0, -3];
      }
      for (let i = 0; i < n; i++) ops.set(KEYS[i]!, value, ARGV[1]!);
      if (!fencing) return [1, 0];
      const retention = ARGV[3]!;
      if (mine === n) {
        let token = 0;
        for (let i = n; i < 2 * n; i++) token = Math.max(token, luaNumber(ops.get(KEYS[i]!)) ?? 0);
        return [1, token];
      }
      // The token: above every counter and at least the client's clock in µs (ARGV[5]); every counter is raised to it.
      const floor = Number(ARGV[4]);
      let token = floor;
      for (let i = n; i < 2 * n; i++) {
        const c = luaNumber(ops.get(KEYS[i]!));
        if (c !== undefined && c >= token) token = c + 1;
      }
      const text = token > floor ? formatInteger(token) : ARGV[4]!;
      for (let i = n; i < 2 * n; i++) ops.set(KEYS[i]!, text, retention);
      return [1, token];
    },
  ],
  [
    CONFIRM_TOKEN,
    (ops, KEYS, ARGV) => {
      const n = Number(ARGV[2]);
      for (let i = 0; i < n; i++) if (ops.get(KEYS[i]!) !== ARGV[0]) return 0;
      const token = Number(ARGV[1]);
      for (let i = n; i < 2 * n; i++) {
        const c = luaNumber(ops.get(KEYS[i]!)) ?? 0;
        if (c < token) ops.set(KEYS[i]!, ARGV[1]!, ARGV[3]!);
      }
      return 1;
    },
  ],
  [
    EXTEND,
    (ops, KEYS, ARGV) => {
      for (const key of KEYS) if (ops.get(key) !== ARGV[0]) return 0;
      for (const key of KEYS) ops.pexpire(key, ARGV[1]!);
      return 1;
    },
  ],
  [INSPECT, (ops, KEYS) => [ops.get(KEYS[0]!), ops.pttl(KEYS[0]!), ops.get(KEYS[1]!), ops.zcard(KEYS[2]!)]],
  [
    FENCED_ACCESS,
    (ops, KEYS, ARGV) => {
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
    },
  ],
  [
    RELEASE,
    (ops, KEYS, ARGV) => {
      const fair = ARGV.length > 1;
      const n = fair ? KEYS.length / 3 : KEYS.length;
      const waiter = ARGV[2] ?? '';
      let deleted = 0;
      for (let i = 1; i <= n; i++) {
        const freed = ops.get(KEYS[i - 1]!) === ARGV[0];
        if (freed) {
          ops.del(KEYS[i - 1]!);
          deleted++;
        }
        if (fair) {
          const q = KEYS[n + 2 * i - 2]!;
          if (waiter !== '') {
            ops.zrem(q, waiter);
            ops.hdel(KEYS[n + 2 * i - 1]!, waiter);
          }
          if (freed) {
            const head = ops.zfirst(q);
            if (head !== undefined && head !== ARGV[3]) ops.publish(wakeChannel(ARGV[1]!, head), head);
          }
        }
      }
      return deleted;
    },
  ],
  [
    LEAVE_QUEUE,
    (ops, KEYS, ARGV) => {
      for (let i = 0; i < KEYS.length; i += 2) {
        const first = ops.zfirst(KEYS[i]!);
        ops.zrem(KEYS[i]!, ARGV[0]!);
        ops.hdel(KEYS[i + 1]!, ARGV[0]!);
        if (first === ARGV[0]) {
          const head = ops.zfirst(KEYS[i]!);
          if (head !== undefined) ops.publish(wakeChannel(ARGV[1]!, head), head);
        }
      }
      return 1;
    },
  ],
]);

/** The channel the scripts wake a waiter on: the prefix, then the waiter id's part before the first '.'. */
function wakeChannel(prefix: string, waiter: string): string {
  const dot = waiter.indexOf('.');
  return prefix + (dot < 0 ? waiter : waiter.slice(0, dot));
}

const BY_SHA = new Map([...IMPLEMENTATIONS].map(([script, run]) => [script.sha, { script, run }]));

/**
 * SHA-1 of the Lua text each JavaScript twin above was written from. A test
 * compares them with the scripts in lib/core/scripts.ts: when a script changes,
 * its twin must be reviewed and this table updated.
 */
export const IMPLEMENTED_SHAS: Readonly<Record<string, string>> = Object.freeze({
  acquire: '228649b51ae7400c4de0d2b63735caf77adff0bc',
  'confirm-token': '2d850f47b410020965c746ec96f022c19ea2ebe0',
  extend: '6a675cd8e12e2285083b1e41ad7c1e77638f584f',
  inspect: '6a7224d416ecd2be77631dbab42cf641a5f63030',
  'fenced-access': '561b03b518fa7297b0bff7bdd33790191b028255',
  release: 'dd2ed69dfbbad923ff90bd00801c1b88e9596bd6',
  'leave-queue': '98625b4460d6319d6b79f73a7af14a397a819057',
});

/** The scripts a memory node runs, by name and current SHA. */
export function memoryNodeScripts(): readonly Script[] {
  return [...IMPLEMENTATIONS.keys()];
}

let nextPort = 1;
/** The server a connection being made by `duplicate()` joins. */
let sharing: MemoryServer | undefined;

/**
 * An in-process stand-in for one ioredis client connected to its own Redis
 * server, for tests without Redis: pass several to `Redlock` (or use
 * `createMemoryRedlock`, `RedlockTestingModule`) and locks behave as with real
 * nodes: exclusion, ttl expiry, extension, busy answers, fencing tokens, fair
 * wait queues with wake-ups on release.
 *
 * Each `new MemoryRedisNode()` is an independent server with its own keys;
 * `duplicate()` is another connection to the same server. Only the commands
 * this library uses are implemented: its scripts (EVALSHA, with NOSCRIPT until
 * EVAL loaded them, as on Redis), SET NX PX, PING, INFO, SUBSCRIBE/PUBLISH, and a
 * few commands for tests (GET, SET, DEL, EXISTS, PTTL, TYPE, ZCARD, ZRANGE, HGETALL,
 * KEYS, FLUSHALL).
 *
 * Controls for failure tests act on the server at once: `pause()`/`resume()`
 * (commands wait, as on a hung server), `down()`/`up()` (commands fail, as on
 * an unreachable one), `restart()` (keys lost, new run id).
 */
export class MemoryRedisNode extends EventEmitter {
  /** What tells nodes apart (host, a port unique in this process, db), as an ioredis client's options do. */
  readonly options: { readonly host: string; readonly port: number; readonly db: number };
  private readonly server: MemoryServer;
  private state: MemoryNodeStatus = 'ready';
  private readonly channels = new Set<string>();

  constructor(options: MemoryRedisNodeOptions = {}) {
    super();
    // Many lock clients may share one node in a test: no leak warning for their listeners.
    this.setMaxListeners(0);
    const shared = sharing;
    sharing = undefined;
    if (shared) {
      this.server = shared;
    } else {
      if (options.latency !== undefined && !(Number.isFinite(options.latency) && options.latency >= 0)) {
        throw new TypeError(`Expected \`latency\` to be a non-negative number of ms, got ${options.latency}`);
      }
      this.server = new MemoryServer(options.now ?? Date.now, options.latency ?? 0, options.host ?? 'memory', nextPort++);
    }
    this.options = { host: this.server.host, port: this.server.port, db: 0 };
    this.server.connections.add(this);
    if (this.server.down) this.state = 'reconnecting';
  }

  /** `ready`, `reconnecting` while the node is down, `end` once this connection is closed. */
  get status(): MemoryNodeStatus {
    return this.state;
  }

  /** `host:port`, as the lock client labels this node. */
  get label(): string {
    return this.server.label;
  }

  // ---- ioredis API used by the library ------------------------------------

  /** Runs a script by SHA; rejects with NOSCRIPT until `eval` loaded it, or when it is not one of this library's. */
  evalsha(sha: string, numKeys: number | string, ...keysAndArgs: Arg[]): Promise<unknown> {
    return this.command((ops) => {
      const implementation = BY_SHA.get(String(sha).toLowerCase());
      if (!implementation || !this.server.loaded.has(implementation.script.sha)) {
        throw new Error('NOSCRIPT No matching script. Please use EVAL.');
      }
      return runImplementation(implementation.run, ops, numKeys, keysAndArgs);
    });
  }

  /** Runs (and caches) one of this library's scripts from its Lua text; other scripts are refused. */
  eval(lua: string, numKeys: number | string, ...keysAndArgs: Arg[]): Promise<unknown> {
    const sha = createHash('sha1').update(lua).digest('hex');
    return this.command((ops) => {
      const implementation = BY_SHA.get(sha);
      if (!implementation) {
        throw new Error(`ERR MemoryRedisNode runs only nest-redlock's own scripts; this one (sha ${sha}) is not one of them`);
      }
      this.server.loaded.add(sha);
      return runImplementation(implementation.run, ops, numKeys, keysAndArgs);
    });
  }

  ping(): Promise<'PONG'> {
    return this.command(() => 'PONG' as const, true);
  }

  /** `INFO server`: the run id (new after `restart()`) and uptime the restart guard reads. */
  info(section?: string): Promise<string> {
    return this.command(() => {
      if (section !== undefined && !['server', 'default', 'all', 'everything'].includes(section.toLowerCase())) return '';
      const uptime = Math.max(0, Math.floor((this.server.now() - this.server.startedAt) / 1000));
      return [
        '# Server',
        'redis_version:7.2.0',
        'redis_mode:standalone',
        'executable:nest-redlock/testing MemoryRedisNode',
        `run_id:${this.server.runId}`,
        `tcp_port:${this.options.port}`,
        `uptime_in_seconds:${uptime}`,
        `uptime_in_days:${Math.floor(uptime / 86_400)}`,
        '',
      ].join('\r\n');
    });
  }

  /** Another connection to the same server (the lock client subscribes on one). Options are ignored. */
  duplicate(_options?: unknown): MemoryRedisNode {
    sharing = this.server;
    return new MemoryRedisNode();
  }

  /** Subscribes; like ioredis, a connection resubscribes after the node comes back up. */
  subscribe(...channels: string[]): Promise<number> {
    if (this.state !== 'end') for (const channel of channels) this.channels.add(channel);
    return this.command(() => this.channels.size, true);
  }

  unsubscribe(...channels: string[]): Promise<number> {
    if (channels.length === 0) this.channels.clear();
    for (const channel of channels) this.channels.delete(channel);
    return this.command(() => this.channels.size, true);
  }

  /** Closes this connection (the server and its keys stay). */
  async quit(): Promise<'OK'> {
    this.disconnect();
    return 'OK';
  }

  /** Closes this connection at once (the server and its keys stay). */
  disconnect(): void {
    if (this.state === 'end') return;
    const wasReady = this.state === 'ready';
    this.state = 'end';
    this.channels.clear();
    this.server.connections.delete(this);
    if (wasReady) this.emit('close');
    this.emit('end');
  }

  /** Reopens a closed connection. */
  async connect(): Promise<void> {
    if (this.state !== 'end') return;
    this.server.connections.add(this);
    if (this.server.down) {
      this.state = 'reconnecting';
      throw this.server.downError();
    }
    this.state = 'ready';
    this.emit('connect');
    this.emit('ready');
  }

  // ---- plain commands, for tests --------------------------------------------

  get(key: string): Promise<string | null> {
    return this.command((ops) => ops.get(key));
  }

  /**
   * `SET key value [PX ms] [NX]`: e.g. a lock key held by "someone else"; with
   * NX (the plain protocol's acquire) only when the key is missing, else null.
   */
  set(key: string, value: string, px?: 'PX' | 'px', ms?: number | string, nx?: 'NX' | 'nx'): Promise<'OK' | null> {
    return this.command((ops) => {
      if (px !== undefined && px.toUpperCase() !== 'PX') throw new Error('ERR syntax error');
      if (nx !== undefined && nx.toUpperCase() !== 'NX') throw new Error('ERR syntax error');
      if (nx !== undefined && ops.exists(key)) return null;
      ops.set(key, value, px === undefined ? undefined : String(ms));
      return 'OK' as const;
    });
  }

  del(...keys: string[]): Promise<number> {
    return this.command((ops) => keys.reduce((n, key) => n + ops.del(key), 0));
  }

  exists(...keys: string[]): Promise<number> {
    return this.command((ops) => keys.reduce((n, key) => n + ops.exists(key), 0));
  }

  pttl(key: string): Promise<number> {
    return this.command((ops) => ops.pttl(key));
  }

  zcard(key: string): Promise<number> {
    return this.command((ops) => ops.zcard(key));
  }

  /** `ZRANGE key start stop` (indexes as in Redis: negative from the end). */
  zrange(key: string, start: number, stop: number): Promise<string[]> {
    return this.command((ops) => {
      const members = ops.zmembers(key);
      const n = members.length;
      const from = Math.max(0, start < 0 ? n + start : start);
      const to = Math.min(n - 1, stop < 0 ? n + stop : stop);
      return from > to ? [] : members.slice(from, to + 1);
    });
  }

  hgetall(key: string): Promise<Record<string, string>> {
    return this.command((ops) => ops.hgetall(key));
  }

  type(key: string): Promise<'string' | 'zset' | 'hash' | 'none'> {
    return this.command((ops) => ops.type(key));
  }

  /** Live key names matching a Redis glob pattern (default `*`). */
  keys(pattern = '*'): Promise<string[]> {
    return this.command((ops) => ops.keys(pattern).sort());
  }

  flushall(): Promise<'OK'> {
    return this.command(() => {
      this.server.data.clear();
      return 'OK' as const;
    });
  }

  // ---- controls, acting on the server at once ---------------------------------

  /** Deletes every key now, whatever the node's state (the script cache stays, as with FLUSHALL). */
  flush(): void {
    this.server.data.clear();
  }

  /** Commands are held, unanswered, until `resume()`: a hung server. */
  pause(): void {
    this.server.paused = true;
  }

  /** Runs the held commands in order and answers them. */
  resume(): void {
    this.server.resume();
  }

  get isPaused(): boolean {
    return this.server.paused;
  }

  /** Connections close ('close', and 'error' where listened to) and commands fail until `up()`: an unreachable server. Keys are kept. */
  down(): void {
    this.server.takeDown();
  }

  /** Connections are ready again ('ready'), with the same run id and keys: a network partition healed. */
  up(): void {
    this.server.bringUp();
  }

  get isDown(): boolean {
    return this.server.down;
  }

  /**
   * A server restart: connections close and come back with a new run id and
   * uptime 0; keys and the script cache are lost unless `keepData` (a server
   * that persisted every write).
   */
  restart(options: { keepData?: boolean } = {}): void {
    this.server.takeDown();
    if (!options.keepData) this.server.data.clear();
    this.server.loaded.clear();
    this.server.runId = randomBytes(20).toString('hex');
    this.server.startedAt = this.server.now();
    this.server.bringUp();
  }

  // ---- internals ----------------------------------------------------------------

  /** @internal The server went down. */
  serverDown(error: Error): void {
    if (this.state !== 'ready') return;
    this.state = 'reconnecting';
    this.emit('close');
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  /** @internal The server is back. */
  serverUp(): void {
    if (this.state !== 'reconnecting') return;
    this.state = 'ready';
    this.emit('connect');
    this.emit('ready');
  }

  /** @internal A PUBLISH on this connection's server: true when this connection is subscribed. */
  deliver(channel: string, message: string): boolean {
    if (this.state !== 'ready' || !this.channels.has(channel)) return false;
    queueMicrotask(() => {
      if (this.channels.has(channel)) this.emit('message', channel, message);
    });
    return true;
  }

  private command<T>(run: (ops: Ops) => T, allowedWhenSubscribed = false): Promise<T> {
    if (this.state === 'end') return Promise.reject(new Error('Connection is closed.'));
    return this.server.submit((ops) => {
      if (!allowedWhenSubscribed && this.channels.size > 0) {
        throw new Error("ERR Can't execute this command: only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context");
      }
      return run(ops);
    });
  }
}

function runImplementation(run: Implementation, ops: Ops, numKeys: number | string, keysAndArgs: Arg[]): unknown {
  const n = Number(numKeys);
  if (!Number.isInteger(n) || n < 0) throw new Error("ERR Number of keys can't be negative");
  if (n > keysAndArgs.length) throw new Error("ERR Number of keys can't be greater than number of args");
  const strings = keysAndArgs.map((a) => (Buffer.isBuffer(a) ? a.toString() : String(a)));
  return run(ops, strings.slice(0, n), strings.slice(n));
}

/** `count` independent in-memory nodes (default 3: a quorum of 2). */
export function createMemoryNodes(count = 3, options: MemoryRedisNodeOptions = {}): MemoryRedisNode[] {
  if (!Number.isInteger(count) || count < 1) throw new TypeError(`Expected a node count of at least 1, got ${count}`);
  return Array.from({ length: count }, () => new MemoryRedisNode(options));
}
