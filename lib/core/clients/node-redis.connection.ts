import { later } from '../later.js';
import type { LockConnection, PrimaryInfo, ScanStep, Subscription } from '../connection.js';
import { sendScript, type Done, type Script, type ScriptRunner } from '../script.js';
import { hostOf } from './host.js';
import { clientEvents, clusterEvents, type EventSource } from './node-redis.events.js';
import { quietly, refusalOf } from './settle.js';

/**
 * A node-redis client (`createClient` of `redis` / `@redis/client`, v4 to v6)
 * of any copy of the package, typed by shape: the lock client never imports
 * node-redis, the application brings it (and connects it).
 */
export interface NodeRedisClientLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  sendCommand(...args: any[]): Promise<unknown>;
  duplicate(...args: any[]): unknown;
}

/** A node-redis cluster (`createCluster`, v4 to v6), typed by shape. */
export interface NodeRedisClusterLike {
  readonly isOpen: boolean;
  readonly masters: readonly unknown[];
  sendCommand(...args: any[]): Promise<unknown>;
  duplicate(...args: any[]): unknown;
}

type Shape = Partial<Record<'sendCommand' | 'duplicate' | 'isOpen' | 'isReady' | 'masters', unknown>>;

/**
 * True for a node-redis client or cluster of any copy of the package: both
 * send raw commands with `sendCommand` and say `isOpen`; a cluster lists its
 * `masters`. (ioredis clients have neither `isOpen` nor `masters`.)
 */
export function isNodeRedis(client: object): client is NodeRedisClientLike | NodeRedisClusterLike {
  const c = client as Shape;
  if (typeof c.sendCommand !== 'function' || typeof c.duplicate !== 'function' || typeof c.isOpen !== 'boolean') return false;
  return Array.isArray(c.masters) || typeof c.isReady === 'boolean';
}

/** The options node-redis keeps (v4 to v6): the socket's address, a URL, the database. */
interface ClientOptions {
  url?: string;
  database?: number;
  legacyMode?: boolean;
  socket?: { host?: string; port?: number; path?: string; [option: string]: unknown };
}

/** A cluster's primary: `client` is the connection to it once made (v4: a promise while it is made; v5 and later: `connectPromise`). */
interface Primary {
  readonly host?: string;
  readonly port?: number;
  readonly client?: unknown;
  readonly connectPromise?: unknown;
}

/** What the adapter uses of either kind of client, beside `sendCommand`. */
interface Client extends EventSource {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  readonly options?: ClientOptions;
  readonly masters?: readonly Primary[];
  readonly _options?: { rootNodes?: readonly { url?: string; socket?: ClientOptions['socket'] }[] };
  readonly v4?: { sendCommand(args: string[]): Promise<unknown> };
  sendCommand(...args: unknown[]): Promise<unknown>;
  /** A cluster's connection to one of its nodes (a promise in some versions). */
  nodeClient?(node: unknown): Client | Promise<Client>;
  duplicate(overrides?: object): Client;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: unknown) => void): Promise<unknown>;
  unref?(): void;
  // v5 and later: close / destroy; v4: quit / disconnect.
  close?(): Promise<unknown>;
  quit?(): Promise<unknown>;
  destroy?(): void;
  disconnect?(): Promise<unknown>;
}

/**
 * Replies in node-redis's default types (strings, numbers, arrays, null),
 * whatever type mapping the application gave its client (Buffers, Maps): the
 * scripts' contracts decode those. RESP3 script replies need nothing more: a
 * script that never calls `redis.setresp(3)` replies as under RESP2.
 */
const RAW = { typeMapping: {} };

/**
 * A node reached through node-redis, standalone or cluster, by raw commands
 * (`sendCommand`), which are the same in v4, v5 and v6: one code path for all.
 * The application connects and closes its client; the lock client never does.
 */
export class NodeRedisConnection implements LockConnection {
  readonly identity: string;
  readonly isCluster: boolean;
  // The client's options hold the node's password: truly private.
  readonly #client: Client;
  readonly #send: (firstKey: string | undefined, args: string[]) => Promise<unknown>;
  readonly #scripts: ScriptRunner;
  readonly #on: LockConnection['on'];

  constructor(client: NodeRedisClientLike | NodeRedisClusterLike) {
    const c = client as unknown as Client;
    this.#client = c;
    this.isCluster = Array.isArray(c.masters);
    if (this.isCluster) {
      this.identity = clusterIdentity(c);
      this.#send = (firstKey, args) => c.sendCommand(firstKey, false, args, RAW);
      this.#on = clusterEvents(c);
    } else {
      this.identity = standaloneIdentity(c.options ?? {});
      // A v4 client in legacy mode has a callback sendCommand; its promise one is `v4`'s.
      const legacy = c.options?.legacyMode === true && c.v4 !== undefined;
      this.#send = legacy ? (_, args) => c.v4!.sendCommand(args) : (_, args) => c.sendCommand(args, RAW);
      this.#on = clientEvents(c);
    }
    const withKeys = (command: string, first: string, numKeys: number, rest: (string | number)[]) =>
      this.#send(numKeys > 0 ? String(rest[0]) : undefined, [command, first, String(numKeys), ...rest.map(String)]);
    this.#scripts = {
      evalsha: (sha, numKeys, ...rest) => withKeys('EVALSHA', sha, numKeys, rest),
      eval: (lua, numKeys, ...rest) => withKeys('EVAL', lua, numKeys, rest),
    };
  }

  get isReady(): boolean {
    return this.#client.isReady ?? this.#client.isOpen;
  }

  get state(): string {
    return this.isReady ? 'ready' : this.#client.isOpen ? 'reconnecting' : 'closed';
  }

  evalsha(script: Script, keys: readonly string[], argv: readonly string[], done: Done, fallbackUntil: number): void {
    if (this.#refusedWhileDown(done)) return;
    sendScript(this.#scripts, script, keys, argv, done, fallbackUntil);
  }

  setNx(key: string, value: string, ttl: string, done: Done): void {
    if (this.#refusedWhileDown(done)) return;
    this.#send(key, ['SET', key, value, 'PX', ttl, 'NX']).then(
      (reply) => done(undefined, reply),
      (error: unknown) => done(error ?? new Error('SET NX failed')),
    );
  }

  /**
   * Fails a lock command at once while the client is between connections: in
   * node-redis's offline queue (on by default) it would wait past any node
   * timeout, so a majority down took every retry's timeouts to say so instead
   * of failing at once as over the library's own ioredis connections (offline
   * queue off). The application's own commands keep its queue. A cluster stays
   * open while its servers are gone: it is down once every primary's connection
   * was lost and is being made again (each shard's client queues offline too).
   */
  #refusedWhileDown(done: Done): boolean {
    const error = this.#downError();
    if (!error) return false;
    later(() => done(error));
    return true;
  }

  /** Why a command must fail at once (see `#refusedWhileDown`), or `undefined`. */
  #downError(): Error | undefined {
    if (!this.isReady) return new Error(`not connected (${this.state})`);
    if (this.isCluster && this.#primariesLost()) return new Error('not connected (every primary reconnecting)');
    return undefined;
  }

  /** Every primary's connection was made and is now lost: a shard's first connection, or one being made, is waited for. */
  #primariesLost(): boolean {
    const masters = this.#client.masters ?? [];
    return masters.length > 0 && masters.every(isLost);
  }

  loadScripts(scripts: readonly Script[]): Promise<void> {
    if (!this.isCluster) return quietly(Promise.all(scripts.map((script) => this.#send(undefined, ['SCRIPT', 'LOAD', script.lua]))));
    // On a cluster, every primary: a shard's first NOSCRIPT, answered after the node timeout on a
    // loaded host, gets no EVAL (see LockConnection.evalsha). A shard added later loads them on its first.
    const cluster = this.#client;
    return quietly(
      Promise.all(
        (cluster.masters ?? []).map(async (master) => {
          const shard = await cluster.nodeClient!(master);
          await Promise.all(scripts.map((script) => shard.sendCommand(['SCRIPT', 'LOAD', script.lua], RAW)));
        }),
      ),
    );
  }

  scanners(): readonly ScanStep[] {
    const args = (cursor: string, match: string, count: number) => ['SCAN', cursor, 'MATCH', match, 'COUNT', String(count)];
    const decode = (reply: unknown) => {
      const [cursor, keys] = reply as [unknown, unknown[]];
      return [String(cursor), keys.map(String)] as const;
    };
    if (!this.isCluster) return [(cursor, match, count) => this.#send(undefined, args(cursor, match, count)).then(decode)];
    const cluster = this.#client;
    return (cluster.masters ?? []).map((master) => async (cursor, match, count) => {
      const shard = await cluster.nodeClient!(master);
      // A shard's lost connection would keep the SCAN in its offline queue for the listing's timeout.
      if (shard.isReady === false) throw new Error('not connected (a primary reconnecting)');
      return decode(await shard.sendCommand(args(cursor, match, count), RAW));
    });
  }

  info(section: 'server' | 'memory' = 'server'): Promise<string> {
    return this.#send(undefined, ['INFO', section]).then(String);
  }

  primaryInfos(section: 'memory'): readonly Promise<readonly PrimaryInfo[]>[] {
    if (!this.isCluster) return [this.info(section).then((info) => [{ info }])];
    const cluster = this.#client;
    return (cluster.masters ?? []).map(async (master) => {
      const shard = await cluster.nodeClient!(master);
      return [{ address: `${master.host}:${master.port}`, info: String(await shard.sendCommand(['INFO', section], RAW)) }];
    });
  }

  ping(): Promise<string> {
    return this.#send(undefined, ['PING']).then(String);
  }

  on(event: 'ready' | 'lost' | 'end' | 'error', listener: (error?: any) => void): () => void {
    return this.#on(event as 'ready', listener);
  }

  subscribe(channel: string, onMessage: (message: string) => void): Subscription {
    return this.isCluster ? subscribeCluster(this.#client, channel, onMessage) : subscribeClient(this.#client, channel, onMessage);
  }

  connect(): void {
    // The application connects its node-redis clients (`await client.connect()`):
    // connecting one here would make the application's own connect() throw.
  }

  quit(): Promise<boolean> {
    const client = this.#client;
    return Promise.resolve()
      .then(() => (client.close ? client.close() : client.quit?.()))
      .then(
        () => true,
        () => false,
      );
  }

  disconnect(): void {
    destroy(this.#client);
  }
}

/** A primary whose connection was made and is lost (node-redis makes it again); not one being made the first time. */
function isLost({ client, connectPromise }: Primary): boolean {
  if (connectPromise !== undefined || typeof client !== 'object' || client === null || 'then' in client) return false;
  return (client as { isReady?: unknown }).isReady === false;
}

/** Closes a client at once; nothing if it is closed already. */
function destroy(client: Client): void {
  try {
    if (client.destroy) client.destroy();
    else void client.disconnect?.().catch(() => undefined);
  } catch {
    // Closed already (ClientClosedError).
  }
}

/**
 * A connection of its own for wake-ups (a subscribed connection cannot run
 * scripts), with the client's options and a reconnect strategy that stops once
 * closed: destroying a client whose connect is under way would leave its socket
 * open, so a closed subscriber is ended by its next connect attempt or at 'ready'.
 */
function subscribeClient(client: Client, channel: string, onMessage: (message: string) => void): Subscription {
  let closed = false;
  const socket = {
    ...client.options?.socket,
    reconnectStrategy: (retries: number) => (closed ? new Error('unsubscribed') : Math.min(retries * 50, 500)),
  };
  const subscriber = client.duplicate({ socket, legacyMode: false });
  subscriber.on('error', () => undefined); // the lock connection reports node errors
  subscriber.on('ready', () => closed && destroy(subscriber));
  const confirmed = refusalOf(subscriber.connect().then(() => subscriber.subscribe(channel, (message) => onMessage(String(message)))));
  return {
    confirmed,
    close: () => {
      closed = true;
      if (subscriber.isReady) destroy(subscriber);
      else subscriber.unref?.(); // still connecting: must not keep the process alive meanwhile
    },
  };
}

/** How long a closed cluster subscriber waits for its SUBSCRIBE to settle before it is closed anyway, ms. */
const SUBSCRIBE_WAIT = 1000;

/** A duplicate of the cluster for wake-ups (a PUBLISH reaches every shard). */
function subscribeCluster(cluster: Client, channel: string, onMessage: (message: string) => void): Subscription {
  let closed = false;
  const subscriber = cluster.duplicate();
  subscriber.on('error', () => undefined);
  const connected = subscriber.connect();
  const confirmed = refusalOf(
    connected.then(() => (closed ? undefined : subscriber.subscribe(channel, (message) => onMessage(String(message))))),
  );
  return {
    confirmed,
    close: () => {
      closed = true;
      // Closed once the SUBSCRIBE settled: the connection it subscribes on is made in it, and one
      // closed while it is made stays open. Servers that stopped answering never settle it, and the
      // subscriber, never closed, reconnected for ever and kept the process alive: so at the latest
      // SUBSCRIBE_WAIT ms after close(), once its connect settled (a cluster's connect ends).
      const close = () => destroy(subscriber);
      const late = setTimeout(() => void connected.then(close, close), SUBSCRIBE_WAIT);
      late.unref();
      void confirmed.then(() => (clearTimeout(late), close()));
    },
  };
}

function standaloneIdentity(options: ClientOptions): string {
  const { socket = {}, url, database } = options;
  if (socket.path) return `unix:${socket.path}/${database ?? 0}`;
  const parsed = url ? new URL(url) : undefined;
  const host = socket.host ?? parsed?.hostname;
  const port = socket.port ?? (parsed?.port ? Number(parsed.port) : 6379);
  const db = database ?? (parsed && parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0);
  return `${hostOf(host)}:${port}/${db}`;
}

/**
 * `cluster(host:port,...)` of its root nodes (v5 and later keep them in
 * `_options`), else of its masters (v4 keeps its options private; its masters
 * are known once it is connected).
 */
function clusterIdentity(cluster: Client): string {
  const roots = cluster._options?.rootNodes ?? cluster.masters ?? [];
  if (roots.length === 0) {
    throw new Error('a node-redis cluster is known by its nodes: connect it first (await cluster.connect())');
  }
  const addresses = roots.map((node) => {
    const { url, socket } = node as { url?: string; socket?: ClientOptions['socket'] };
    const parsed = url ? new URL(url) : undefined;
    const { host, port } =
      socket ?? (url ? { host: parsed!.hostname, port: Number(parsed!.port || 6379) } : (node as ClientOptions['socket'])!);
    return `${hostOf(host)}:${port ?? 6379}`;
  });
  return `cluster(${addresses.sort().join(',')})`;
}
