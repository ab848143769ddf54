import { later } from '../later.js';
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import requireIoredis from './require-ioredis.cjs';
import type { LockConnection, PrimaryInfo, ScanStep, Subscription } from '../connection.js';
import { sendScript, type Done, type Script, type ScriptRunner } from '../script.js';
import { hostOf } from './host.js';
import { quietly } from './settle.js';
import { withoutCredentials } from '../log-safe.js';
import { listenShared } from './shared-listeners.js';

/** A client the lock can send commands through: a standalone `Redis` or a `Cluster`. */
export type RedisClient = Redis | Cluster;

/**
 * An ioredis client of any copy of the package, typed by shape: an
 * application's own ioredis (another version, or another copy of the same one)
 * has classes TypeScript will not take for the library's, since they carry
 * private members. This is what the client checks for at run time too.
 */
export interface IoredisClientLike {
  readonly isCluster: boolean;
  readonly status: string;
  evalsha(...args: any[]): Promise<unknown>;
  duplicate(...args: any[]): unknown;
}

/**
 * True for an ioredis client (`Redis` or `Cluster`) of any copy of the package,
 * told by shape rather than by class: every copy marks its clients with
 * `isCluster`. The testing module's in-memory node has the same shape, and so
 * goes through this adapter exactly as a real client does.
 */
export function isIoredis(client: object): client is IoredisClientLike {
  const c = client as Partial<Record<'isCluster' | 'evalsha' | 'duplicate' | 'nodes' | 'options', unknown>>;
  if (typeof c.evalsha !== 'function' || typeof c.duplicate !== 'function') return false;
  if (c.isCluster === true) return typeof c.nodes === 'function';
  return c.isCluster === false && typeof c.options === 'object' && c.options !== null;
}

/** Longest pause between reconnects of a connection the client opened, ms. */
export const RECONNECT_MAX = 200;

/**
 * How long ioredis waits for a closed socket to confirm before destroying it,
 * on the connections the client opens. ioredis's default, 2 s, is a timer that
 * keeps the process alive after close() while a node is down (it is cleared
 * only by the socket's 'close', which a refused connection already emitted).
 */
const CLOSE_WAIT = { disconnectTimeout: 100 } as RedisOptions;

/** Settings the client applies to connections it opens itself (overridable per node). */
const OWNED_DEFAULTS: RedisOptions = {
  lazyConnect: true,
  // A down node must answer "no" at once instead of queueing commands that
  // would be sent, stale, after it comes back.
  enableOfflineQueue: false,
  // A resent acquire is harmless (the scripts are idempotent) but pointless.
  autoResendUnfulfilledCommands: false,
  ...CLOSE_WAIT,
  // ioredis waits 50 ms more before each new reconnect, up to 2 s: after a long
  // outage a node that is back again would count only seconds later. A refused
  // connect costs next to nothing, so try at least every RECONNECT_MAX ms.
  retryStrategy: (times: number) => Math.min(times * 50, RECONNECT_MAX),
};

/** The ioredis connection the lock client opens for a node given as a URL or an options object. */
export function openIoredis(spec: string | RedisOptions): Redis {
  const { Redis } = requireIoredis();
  return typeof spec === 'string' ? new Redis(spec, { ...OWNED_DEFAULTS }) : new Redis({ ...OWNED_DEFAULTS, ...spec });
}

/** ioredis's states between connections, when its offline queue would hold a command until the next one. */
const BETWEEN_CONNECTIONS = new Set(['close', 'reconnecting', 'end']);
/**
 * ioredis's states while a connection is made (before its ready check is
 * answered), when its offline queue holds a command too: down on a reconnect,
 * which may hang (a server that accepts and never answers), not on the first.
 */
const RECONNECTING = new Set(['connecting', 'connect']);

/** The events this adapter maps, by the lock connection's name. */
const EVENTS = { ready: 'ready', lost: 'close', end: 'end', error: 'error' } as const;

/** A node reached through ioredis: a standalone client (corkable, scripts preloaded) or a Cluster. */
export class IoredisConnection implements LockConnection {
  readonly identity: string;
  readonly isCluster: boolean;
  readonly failsOver: boolean;
  // The client's options hold the node's password: truly private.
  readonly #client: Redis;
  /** The client, or for a client made with `keyPrefix`, its commands sent without the prefix. */
  readonly #commands: LockCommands;
  /** Commands would wait in ioredis's offline queue while the node is down (see `#refusedWhileDown`). */
  readonly #queuesOffline: boolean;

  constructor(client: IoredisClientLike) {
    this.#client = client as unknown as Redis;
    this.isCluster = client.isCluster;
    // A connection that subscribed (or runs MONITOR) refuses every other command: it would
    // pass for a node that is down at every call. `mode` is ioredis's own word for it.
    const { mode } = this.#client as { mode?: unknown };
    if (!this.isCluster && mode !== undefined && mode !== 'normal') {
      throw new TypeError(
        `the client is in ${String(mode)} mode, where it cannot run the lock's commands (pass another client, e.g. client.duplicate())`,
      );
    }
    const { options } = this.#client;
    // A Sentinel-managed client follows its group's master wherever it is: its
    // host and port options are unused defaults (localhost:6379).
    this.failsOver = !this.isCluster && Array.isArray(options.sentinels) && options.sentinels.length > 0;
    this.identity = this.isCluster ? clusterIdentity(client) : this.failsOver ? sentinelIdentity(options) : standaloneIdentity(options);
    this.#commands = options.keyPrefix ? unprefixed(this.#client) : asIs(this.#client);
    // A Cluster's options name its own offline queue the same way.
    this.#queuesOffline = options.enableOfflineQueue !== false;
  }

  get isReady(): boolean {
    return this.#client.status === 'ready';
  }

  get state(): string {
    return this.#client.status;
  }

  evalsha(script: Script, keys: readonly string[], argv: readonly string[], done: Done, fallbackUntil: number): void {
    if (this.#refusedWhileDown(done)) return;
    this.cork();
    sendScript(this.#commands.scripts, script, keys, argv, done, fallbackUntil);
  }

  setNx(key: string, value: string, ttl: string, done: Done): void {
    if (this.#refusedWhileDown(done)) return;
    this.cork();
    this.#commands.setNx(key, value, ttl).then(
      (reply) => done(undefined, reply),
      (error: unknown) => done(error ?? new Error('SET NX failed')),
    );
  }

  /**
   * Fails a lock command at once while a client with an offline queue (an
   * application's client, made with ioredis's default) is between connections:
   * queued, it would wait past any node timeout, so a majority down took every
   * retry's timeouts to say so, where the connections the library opens (no
   * offline queue) fail at once. The application's own commands keep its queue.
   * A command sent while the first connection is being made waits for it, as
   * the first call waits for the first connections; one sent while a
   * reconnect is made fails at once, as between connections. A Cluster client
   * is between connections only once it lost every server: while some remain
   * it is ready, and sends each command to its shard's connection.
   */
  #refusedWhileDown(done: Done): boolean {
    const error = this.#downError();
    if (!error) return false;
    later(() => done(error));
    return true;
  }

  /** Why a command must fail at once (see `#refusedWhileDown`), or `undefined`. */
  #downError(): Error | undefined {
    const { status } = this.#client;
    if (!this.#queuesOffline || status === 'ready') return undefined;
    const down = BETWEEN_CONNECTIONS.has(status) || (RECONNECTING.has(status) && this.#reconnects() > 0);
    return down ? new Error(`not connected (${status})`) : undefined;
  }

  /**
   * Connection attempts that failed since the client was last ready (ioredis
   * counts them until one is ready, a Cluster client too): a reconnect under way, where a command
   * would wait in the offline queue as it does between connections. Private
   * in ioredis's types, but kept by every version since 4 and by iovalkey; a
   * client without it is waited for on every connection, as before.
   */
  #reconnects(): number {
    const { retryAttempts } = this.#client as unknown as { retryAttempts?: unknown };
    return typeof retryAttempts === 'number' ? retryAttempts : 0;
  }

  /**
   * Corks the socket until the end of this tick, so that the commands sent in
   * it share one write, the first one too (see `LockNode.send`). A Cluster
   * writes to many sockets; only a standalone client's one socket is corked.
   */
  private cork(): void {
    const stream = this.isCluster ? undefined : this.#client.stream;
    if (stream && !stream.writableCorked) {
      stream.cork();
      later(() => stream.uncork());
    }
  }

  loadScripts(scripts: readonly Script[]): Promise<void> {
    // On a Cluster, every master: a shard's first NOSCRIPT, answered after the node timeout on a
    // loaded host, gets no EVAL (see LockConnection.evalsha). A shard added later loads them on its first.
    const servers: Redis[] = this.isCluster ? (this.#client as unknown as Cluster).nodes('master') : [this.#client];
    this.cork();
    return quietly(Promise.all(servers.flatMap((server) => scripts.map((script) => server.script('LOAD', script.lua)))));
  }

  scanners(): readonly ScanStep[] {
    // The testing module's in-memory node is shaped like a standalone client, SCAN included.
    const servers: Redis[] = this.isCluster ? (this.#client as unknown as Cluster).nodes('master') : [this.#client];
    // A SCAN queued offline would wait out the listing's timeout, as a lock command would its node timeout.
    return servers.map((server) => (cursor, match, count) => {
      const down = this.#downError();
      return down ? Promise.reject(down) : server.scan(cursor, 'MATCH', match, 'COUNT', count);
    });
  }

  info(section: 'server' | 'memory' = 'server'): Promise<string> {
    return this.#client.info(section);
  }

  primaryInfos(section: 'memory'): readonly Promise<readonly PrimaryInfo[]>[] {
    if (!this.isCluster) return [this.info(section).then((info) => [{ info }])];
    const masters = (this.#client as unknown as Cluster).nodes('master');
    return masters.map((master) =>
      master.info(section).then((info) => [{ address: `${master.options.host}:${master.options.port}`, info }]),
    );
  }

  ping(): Promise<string> {
    return this.#client.ping();
  }

  on(event: 'ready' | 'lost' | 'end' | 'error', listener: (error?: any) => void): () => void {
    // A Cluster's 'close' is the whole client's; its commands are retried on other connections.
    if (event === 'lost' && this.isCluster) return () => undefined;
    return listenShared(this.#client, EVENTS[event], listener);
  }

  subscribe(channel: string, onMessage: (message: string) => void): Subscription {
    // ioredis resubscribes after a reconnect on its own, through a promise no one
    // catches: a node lost again before it answered (or a close() meanwhile)
    // rejected it, "Connection is closed.", and the process died of an unhandled
    // rejection (fault suite, nodes killed in turn). Resubscribed here instead.
    // The subscriber is the lock client's own, made from the application's client: closed
    // by the lock client, with its CLOSE_WAIT, not the application's (often ioredis's 2 s).
    const subscriber = this.isCluster
      ? (this.#client as unknown as Cluster).duplicate([], { redisOptions: { ...CLOSE_WAIT } })
      : this.#client.duplicate({ lazyConnect: false, enableOfflineQueue: true, autoResubscribe: false, ...CLOSE_WAIT });
    subscriber.on('error', () => undefined); // the lock connection reports node errors
    subscriber.on('message', (_channel: string, message: string) => onMessage(message));
    let settled = false;
    const confirmed = subscriber.subscribe(channel).then(
      () => void (settled = true),
      (error: unknown) => ((settled = true), error),
    );
    if (!this.isCluster) resubscribeOnReady(subscriber as Redis, channel, () => settled);
    return { confirmed, close: () => subscriber.disconnect() };
  }

  connect(): void {
    if (this.#client.status === 'wait') this.#client.connect().catch(() => undefined);
  }

  quit(): Promise<boolean> {
    const quit = this.#client.quit().then(
      () => true,
      () => false,
    );
    // ioredis's quit() leaves a Sentinel client's failover detector (option
    // failoverDetector) subscribed on every sentinel, reconnecting forever;
    // only disconnect() stops it.
    return this.failsOver ? quit.then((quitted) => (this.#client.disconnect(), quitted)) : quit;
  }

  disconnect(): void {
    this.#client.disconnect();
  }
}

/** The commands of the lock's hot path. */
interface LockCommands {
  readonly scripts: ScriptRunner;
  setNx(key: string, value: string, ttl: string): Promise<unknown>;
}

/** The client's own commands. */
function asIs(client: Redis): LockCommands {
  return { scripts: client, setNx: (key, value, ttl) => client.set(key, value, 'PX', ttl, 'NX') };
}

/**
 * The commands the lock sends, without the client's `keyPrefix`. ioredis would
 * prefix the lock's keys but neither its wake-up channels nor its SCAN
 * patterns, and the scripts build a resource's other keys from its lock key by
 * the prefix's length: a waiter that gave up stayed queued, releases woke
 * nobody, and `list()` found nothing. So the lock's keys are named by its
 * `prefix` option alone, as with node-redis's `keyPrefix`, and applications
 * whose clients differ in prefix still exclude each other. ioredis's command
 * methods read the prefix from `this.options` and send through
 * `this.sendCommand`: called on a stand-in whose options lack it, they make the
 * client's own copy's commands without it, sent by the client.
 */
function unprefixed(client: Redis): LockCommands {
  const bare = {
    options: { ...client.options, keyPrefix: undefined, enableAutoPipelining: false },
    sendCommand: (...args: Parameters<Redis['sendCommand']>) => client.sendCommand(...args),
  } as unknown as Redis;
  return {
    scripts: {
      evalsha: (...args) => client.evalsha.apply(bare, args as Parameters<Redis['evalsha']>),
      eval: (...args) => client.eval.apply(bare, args as Parameters<Redis['eval']>),
    },
    setNx: (key, value, ttl) => (client.set as unknown as (...args: string[]) => Promise<unknown>).call(bare, key, value, 'PX', ttl, 'NX'),
  };
}

/**
 * SUBSCRIBE again at each 'ready', its failure caught; except at the first
 * while the first SUBSCRIBE is still queued (it goes out then). A SUBSCRIBE
 * lost with its connection is dropped by ioredis without an answer
 * (autoResendUnfulfilledCommands off): the next 'ready' sends it again.
 */
function resubscribeOnReady(subscriber: Redis, channel: string, firstSettled: () => boolean): void {
  let readies = 0;
  subscriber.on('ready', () => {
    if (readies++ > 0 || firstSettled()) subscriber.subscribe(channel).catch(() => undefined);
  });
}

function standaloneIdentity({ host, port, path, db }: RedisOptions): string {
  const where = path ? `unix:${path}` : `${hostOf(host)}:${port ?? 6379}`;
  return `${where}/${db ?? 0}`;
}

/**
 * `sentinel(<group> at <sentinels>)/db`: one group name may exist in several
 * Sentinel deployments, told apart by their sentinels' addresses (sorted, so
 * that the order they are listed in does not matter). Two specs must then list
 * the same sentinels to be seen as one node.
 */
function sentinelIdentity({ name, sentinels, db }: RedisOptions): string {
  const where = sentinels!.map(({ host, port }) => `${hostOf(host)}:${port ?? 26379}`);
  // Not 'name@...': log-safe renderings take what precedes an '@' for credentials, and would mask the group.
  return `sentinel(${name ?? ''} at ${[...new Set(where)].sort().join(',')})/${db ?? 0}`;
}

function clusterIdentity(client: IoredisClientLike): string {
  const seeds = (client as unknown as { startupNodes: unknown[] }).startupNodes.map(seedAddress);
  return `cluster(${seeds.sort().join(',')})`;
}

/**
 * A Cluster seed as host:port. ioredis takes a port, 'host:port', a URL (whose
 * user and password it uses: never shown) or { host, port }.
 */
function seedAddress(seed: unknown): string {
  if (typeof seed === 'number') return `127.0.0.1:${seed}`;
  if (typeof seed !== 'string') return `${hostOf((seed as { host?: string }).host)}:${(seed as { port?: number }).port ?? 6379}`;
  try {
    const url = new URL(seed.includes('://') ? seed : `redis://${seed}`);
    return `${hostOf(url.hostname)}:${url.port || 6379}`;
  } catch {
    return withoutCredentials(seed);
  }
}
