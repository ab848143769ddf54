import { EventEmitter } from 'node:events';
import type { Ops } from './memory-data.js';
import { SUBSCRIBED_CONTEXT_ERROR, Subscriptions } from './memory-pubsub.js';
import { evalLua, evalSha, loadLua, scriptSha, type Arg } from './memory-scripts.js';
import { MemoryServer, type MemoryRedisNodeOptions } from './memory-server.js';

/** Connection states an ioredis client reports in `status`, as far as this stand-in uses them. */
export type MemoryNodeStatus = 'ready' | 'reconnecting' | 'end';

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
 * EVAL loaded them, as on Redis), SET NX PX, PING, INFO, SUBSCRIBE/PUBLISH, SCAN, and a
 * few commands for tests (GET, SET, DEL, EXISTS, PTTL, TYPE, ZCARD, ZRANGE, HGETALL,
 * KEYS, FLUSHALL).
 *
 * Controls for failure tests act on the server at once: `pause()`/`resume()`
 * (commands wait, as on a hung server), `down()`/`up()` (commands fail, as on
 * an unreachable one), `restart()` (keys lost, new run id).
 */
export class MemoryRedisNode extends EventEmitter {
  /**
   * What tells nodes apart (host, a port unique in this process, db), as an ioredis client's options do; and
   * that commands are never queued while the node is down (they fail at once, with the reason).
   */
  readonly options: { readonly host: string; readonly port: number; readonly db: number; readonly enableOfflineQueue: false };
  /** A standalone node, as ioredis marks its clients: the lock client talks to it through its ioredis adapter. */
  readonly isCluster = false;
  private readonly server: MemoryServer;
  private state: MemoryNodeStatus = 'ready';
  private readonly subscriptions = new Subscriptions(this);
  /** SCAN cursors handed out and not finished: cursor -> the last key it returned. */
  private readonly cursors = new Map<string, string>();
  private lastCursor = 0;

  /** A connection to a new server of its own. */
  constructor(options?: MemoryRedisNodeOptions);
  /** @internal Another connection to `server` (`duplicate()`); `options` are ignored. */
  constructor(options: MemoryRedisNodeOptions, server: MemoryServer);
  constructor(options: MemoryRedisNodeOptions = {}, server?: MemoryServer) {
    super();
    // Many lock clients may share one node in a test: no leak warning for their listeners.
    this.setMaxListeners(0);
    this.server = server ?? MemoryServer.create(options);
    this.options = { host: this.server.host, port: this.server.port, db: 0, enableOfflineQueue: false };
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
    return this.command((ops) => evalSha(ops, this.server.loaded, sha, numKeys, keysAndArgs));
  }

  /** Runs (and caches) one of this library's scripts from its Lua text; other scripts are refused. */
  eval(lua: string, numKeys: number | string, ...keysAndArgs: Arg[]): Promise<unknown> {
    const sha = scriptSha(lua);
    return this.command((ops) => evalLua(ops, this.server.loaded, sha, numKeys, keysAndArgs));
  }

  /** `SCRIPT LOAD lua` (the lock client loads its scripts on each new connection); other scripts are refused. */
  script(subcommand: 'LOAD' | 'load', lua: string): Promise<string> {
    if (subcommand.toUpperCase() !== 'LOAD') return Promise.reject(new Error(`ERR unknown subcommand '${subcommand}'`));
    return this.command(() => loadLua(this.server.loaded, lua));
  }

  ping(): Promise<'PONG'> {
    return this.command(() => 'PONG' as const, true);
  }

  /** `INFO server`: the run id (new after `restart()`) and uptime the restart guard reads. */
  info(section?: string): Promise<string> {
    return this.command(() => this.server.info(section));
  }

  /** Another connection to the same server (the lock client subscribes on one). Options are ignored. */
  duplicate(_options?: unknown): MemoryRedisNode {
    return new MemoryRedisNode({}, this.server);
  }

  /** Subscribes; like ioredis, a connection resubscribes after the node comes back up. */
  subscribe(...channels: string[]): Promise<number> {
    if (this.state !== 'end') this.subscriptions.add(channels);
    return this.command(() => this.subscriptions.count, true);
  }

  unsubscribe(...channels: string[]): Promise<number> {
    this.subscriptions.remove(channels);
    return this.command(() => this.subscriptions.count, true);
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
    this.subscriptions.clear();
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

  /**
   * `SCAN cursor [MATCH pattern] [COUNT n]`, as the lock client lists locks:
   * keys in byte order, a cursor standing for the last key returned, so that a
   * key present for the whole iteration is returned once whatever else changes.
   */
  scan(cursor: string | number, ...args: (string | number)[]): Promise<[string, string[]]> {
    return this.command((ops) => {
      let match = '*';
      let count = 10;
      for (let i = 0; i < args.length; i += 2) {
        const option = String(args[i]).toUpperCase();
        if (option === 'MATCH' && i + 1 < args.length) match = String(args[i + 1]);
        else if (option === 'COUNT' && Number.isInteger(Number(args[i + 1])) && Number(args[i + 1]) > 0) count = Number(args[i + 1]);
        else throw new Error('ERR syntax error');
      }
      const after = String(cursor) === '0' ? undefined : this.cursors.get(String(cursor));
      if (after === undefined && String(cursor) !== '0') throw new Error('ERR invalid cursor');
      this.cursors.delete(String(cursor));
      const all = ops.keys('*').sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
      const from = after === undefined ? 0 : all.findIndex((key) => Buffer.compare(Buffer.from(key), Buffer.from(after)) > 0);
      const visited = from < 0 ? [] : all.slice(from, from + count);
      const matching = new Set(ops.keys(match));
      const found = visited.filter((key) => matching.has(key));
      if (from < 0 || from + count >= all.length) return ['0', found];
      const next = String(++this.lastCursor);
      this.cursors.set(next, visited.at(-1)!);
      return [next, found];
    });
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
    this.server.restart(options.keepData ?? false);
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
    return this.state === 'ready' && this.subscriptions.deliver(channel, message);
  }

  private command<T>(run: (ops: Ops) => T, allowedWhenSubscribed = false): Promise<T> {
    if (this.state === 'end') return Promise.reject(new Error('Connection is closed.'));
    return this.server.submit((ops) => {
      if (!allowedWhenSubscribed && this.subscriptions.count > 0) throw new Error(SUBSCRIBED_CONTEXT_ERROR);
      return run(ops);
    });
  }
}

/** `count` independent in-memory nodes (default 3: a quorum of 2). */
export function createMemoryNodes(count = 3, options: MemoryRedisNodeOptions = {}): MemoryRedisNode[] {
  if (!Number.isInteger(count) || count < 1) throw new TypeError(`Expected a node count of at least 1, got ${count}`);
  return Array.from({ length: count }, () => new MemoryRedisNode(options));
}
