import type { Done, Script } from './script.js';

/**
 * What the lock client needs of one connection to one Redis-protocol node,
 * whatever client library made it. The core talks to nodes only through this;
 * one adapter per client library implements it (see `clients/`), picked by
 * recognising the client the user passed by its shape, so that another copy of
 * a package works as well as the library's own.
 *
 * Callback style for the commands of a lock (`evalsha`, `setNx`): the hot path
 * makes no promise of its own per command and node.
 */
export interface LockConnection {
  /**
   * What tells nodes apart: two connections with one identity reach one server
   * and database (nodes must fail independently). Also the node's label in
   * reports and logs, so never credentials.
   */
  readonly identity: string;
  /**
   * A cluster spreads keys over shards, each its own server: INFO would answer
   * for one shard only, so the restart guard does not apply.
   */
  readonly isCluster: boolean;
  /**
   * The client follows a primary that can be replaced (a Sentinel failover):
   * a new run id after a reconnect may be another server, whose uptime says
   * nothing of when the keys it lacks were lost, so the restart guard excludes
   * it for its whole window. Absent: false.
   */
  readonly failsOver?: boolean;
  /** True while commands can be sent and answered. */
  readonly isReady: boolean;
  /**
   * The client's own word for its state (`reconnecting`, `end`, ...), for error messages; `end` or
   * `closed` once it will not connect on its own (closed, or a node-redis client never connected).
   */
  readonly state: string;

  /**
   * Runs `script` by SHA and calls `done` once with its raw reply or error. On
   * NOSCRIPT (a restarted or flushed node) sends the script text once, which
   * caches it, unless `performance.now()` is past `fallbackUntil`: by then the
   * caller counted this node as timed out and may have sent the undo, which a
   * late EVAL would overtake (leaving a key nobody holds). The commands sent
   * in one tick, `setNx`'s too, share one write where the client can (a corked
   * socket, a GLIDE pipeline; node-redis writes a tick together by itself).
   */
  evalsha(script: Script, keys: readonly string[], argv: readonly string[], done: Done, fallbackUntil: number): void;
  /** `SET key value PX ttl NX` (the plain protocol's acquire): `done(undefined, 'OK' | null)`. */
  setNx(key: string, value: string, ttl: string, done: Done): void;
  /**
   * Loads the scripts on the current connection, on every primary of a cluster;
   * never rejects (a NOSCRIPT fallback covers a failure). Called when the
   * connection is ready, and again after a NOSCRIPT answered too late for its EVAL.
   */
  loadScripts(scripts: readonly Script[]): Promise<void>;
  /**
   * One SCAN step per server behind this connection (a cluster's masters, in
   * turn): the operators' listing walks each from cursor '0' until it is '0' again.
   */
  scanners(): readonly ScanStep[];
  /**
   * `INFO server` (the restart guard reads the run id and uptime), or another
   * section: `memory`, a standalone server's `primaryInfos`.
   */
  info(section?: 'server' | 'memory'): Promise<string>;
  /**
   * `INFO memory` of every server that holds this node's keys: a cluster's
   * masters (each with its `host:port`), or the one server (no address). A
   * cluster's `info()` reaches one shard, and each shard has its own policy.
   * One promise per request, each settling on its own: a master that hangs,
   * or is down with its command queued until it is back, holds back no other
   * master's answer. (GLIDE reads every primary in one request, bounded by its
   * request timeout: one promise for them all.)
   */
  primaryInfos(section: 'memory'): readonly Promise<readonly PrimaryInfo[]>[];
  ping(): Promise<string>;

  /**
   * Calls `listener` on a connection event; returns the function that removes
   * it (the user's clients outlive the lock client: nothing may stay behind).
   * - `ready`: commands can be sent (the first connection, or again after a drop);
   * - `lost`: the connection dropped: commands in flight have an unknown outcome
   *   and will not be answered by this connection;
   * - `end`: the client gave up (closed, or no more reconnects);
   * - `error`: an error the client reported (a refused connect, an auth failure).
   */
  on(event: 'ready' | 'lost' | 'end', listener: () => void): () => void;
  on(event: 'error', listener: (error: Error) => void): () => void;

  /**
   * Subscribes to `channel` on a connection of its own (a subscribed connection
   * cannot run scripts), calling `onMessage` with each message.
   */
  subscribe(channel: string, onMessage: (message: string) => void): Subscription;

  /** Starts connecting a lazy connection; nothing when it is connecting or connected already. */
  connect(): void;
  /** Closes politely (QUIT): resolves true once the server confirmed, false if it failed. */
  quit(): Promise<boolean>;
  /** Closes at once. */
  disconnect(): void;
}

/** `SCAN cursor MATCH match COUNT count` on one server: the next cursor and the keys found. */
export type ScanStep = (cursor: string, match: string, count: number) => Promise<readonly [cursor: string, keys: readonly string[]]>;

/** A subscription on a dedicated connection. */
export interface Subscription {
  /**
   * Settles once the node confirmed the subscription (with `undefined`) or
   * refused it, or could not be reached (with the error). Never rejects.
   */
  readonly confirmed: Promise<unknown>;
  close(): void;
}

/** One server's INFO section, and where it is when the node has several (a cluster's masters). */
export interface PrimaryInfo {
  readonly address?: string;
  readonly info: string;
}
