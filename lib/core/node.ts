import { Redis, type Cluster, type RedisOptions } from 'ioredis';
import { inspect } from 'node:util';
import { NODE_SCRIPTS, SET_NX, sendScript, type Done } from './scripts.js';
import type { Call, Script } from './script.js';

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
  sendCommand(...args: any[]): unknown;
  evalsha(...args: any[]): Promise<unknown>;
}

/**
 * One Redlock node, as given by the user: an ioredis client (left open by
 * `close()`), a connection URL or an ioredis options object (connected and
 * closed by the lock client).
 */
export type NodeSpec = RedisClient | IoredisClientLike | string | RedisOptions;

/** Settings the client applies to connections it opens itself (overridable per node). */
const OWNED_DEFAULTS: RedisOptions = {
  lazyConnect: true,
  // A down node must answer "no" at once instead of queueing commands that
  // would be sent, stale, after it comes back.
  enableOfflineQueue: false,
  // A resent acquire is harmless (the scripts are idempotent) but pointless.
  autoResendUnfulfilledCommands: false,
  // How long ioredis waits for a closed socket to confirm before destroying it
  // (default 2 s, which keeps a process alive after close() with a node down).
  ...({ disconnectTimeout: 100 } as RedisOptions),
  // ioredis waits 50 ms more before each new reconnect, up to 2 s: after a long
  // outage a node that is back again would count only seconds later. A refused
  // connect costs next to nothing, so try at least every RECONNECT_MAX ms.
  retryStrategy: (times: number) => Math.min(times * 50, RECONNECT_MAX),
};

/** Longest pause between reconnects of a connection the client opened, ms. */
export const RECONNECT_MAX = 200;

const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1']);

/**
 * What kind of client a node was given, told by shape rather than by class: an
 * application often has its own copy of ioredis beside the library's, whose
 * clients fail `instanceof` yet are ioredis all the same (every copy marks its
 * clients with `isCluster`). `other` is a stand-in shaped like ioredis (the
 * testing module's in-memory node).
 */
export type ClientKind = 'standalone' | 'cluster' | 'other';

export function clientKind(client: unknown): ClientKind {
  const c = client as { isCluster?: unknown; sendCommand?: unknown; nodes?: unknown; options?: unknown } | null;
  if (typeof c !== 'object' || c === null || typeof c.sendCommand !== 'function') return 'other';
  if (c.isCluster === true && typeof c.nodes === 'function') return 'cluster';
  if (c.isCluster === false && typeof c.options === 'object' && c.options !== null) return 'standalone';
  return 'other';
}

/**
 * One node of the quorum: its client, a log-safe label and what tells two
 * nodes apart. Knows how to run a script by SHA; knows nothing of quorums.
 */
export class LockNode {
  /** `host:port/db`, for reports and logs; never credentials. */
  readonly label: string;
  /** Same server, same database: two specs with one identity are one node. */
  readonly identity: string;
  private readonly firstReady: Promise<void> | undefined;
  /** Fails the first connection's wait (close() before it was up). */
  private abandonFirst: ((error: Error) => void) | undefined;
  /** `performance.now()` until which this node's votes are not counted (restart guard). */
  private excludedUntil = 0;
  private runId: string | undefined;
  private verified: Promise<void> = Promise.resolve();
  /** The scripts loaded on the current connection (see NODE_SCRIPTS). */
  private loaded: Promise<void> = Promise.resolve();
  /**
   * Commands given to this node and not yet answered (including those waiting
   * for the first connection), oldest first: each one's way to fail it and
   * when it was given. Map order is insertion order, so the first entry says
   * how long the node has been silent.
   */
  private readonly pending = new Map<Done, number>();
  /** Removes the listeners this node added to its client (see `listen`). */
  private readonly listeners: (() => void)[] = [];
  /** Found hung, and not answered everything since (see `isStalled`). */
  private hung = false;
  private onHung: ((silentFor: number) => void) | undefined;
  /** What the client is (see `clientKind`); only a standalone ioredis socket can be corked. */
  readonly kind: ClientKind;

  private constructor(
    readonly client: RedisClient,
    readonly owned: boolean,
  ) {
    this.kind = clientKind(client);
    this.identity = identityOf(client, this.kind);
    if (this.kind === 'standalone') {
      // A command in flight when the connection drops has an unknown outcome, and
      // ioredis never settles it unless it resends it after the reconnect (off for
      // the connections this client opens): fail it now, or it would hang forever
      // and keep the node counted as hung.
      const closed = () => this.failPending(new Error(`connection to ${this.label} closed before it answered`));
      this.listen('close', closed);
    }
    if (typeof (client as Partial<Redis>).pipeline === 'function' && this.kind !== 'cluster') {
      const load = () => {
        const pipeline = (client as Redis).pipeline();
        for (const script of NODE_SCRIPTS) pipeline.script('LOAD', script.lua);
        this.loaded = pipeline.exec().then(
          () => undefined,
          () => undefined,
        );
      };
      this.listen('ready', load);
      if (client.status === 'ready') load();
    }
    this.label = this.identity;
    if (owned) {
      // Until the first connection is up, wait for it instead of failing at once
      // (offline queue is off); after a first failure, fail fast like a down node.
      this.firstReady = new Promise<void>((resolve, reject) => {
        this.abandonFirst = reject;
        const onReady = () => {
          client.off('error', onError);
          resolve();
        };
        const onError = (error: Error) => {
          client.off('ready', onReady);
          reject(error);
        };
        client.once('ready', onReady);
        client.once('error', onError);
      });
      this.firstReady.catch(() => undefined);
    }
  }

  static from(spec: NodeSpec): LockNode {
    // A client the user made: ioredis, or anything shaped like it (the testing module's in-memory node).
    if (clientKind(spec) !== 'other' || typeof (spec as Partial<Redis>).evalsha === 'function') {
      return new LockNode(spec as RedisClient, false);
    }
    const client =
      typeof spec === 'string' ? new Redis(spec, { ...OWNED_DEFAULTS }) : new Redis({ ...OWNED_DEFAULTS, ...(spec as RedisOptions) });
    return new LockNode(client, true);
  }

  /** Logs show the label only: the client's options hold the node's password. */
  [inspect.custom](): string {
    return `LockNode(${this.label})`;
  }

  /** True while the restart guard keeps this node's votes out of the quorum. */
  get excluded(): boolean {
    return this.excludedUntil > performance.now();
  }

  /**
   * Restart guard: a node that restarted less than `window()` ms ago may have
   * lost keys (no persistence, or a crash before fsync), so its votes are not
   * counted until `window()` ms after its restart. Known from the server's run
   * id (a new one after a reconnect) and, with `atFirstContact`, its uptime at
   * the first connection; until a reconnected node has been checked, it is not
   * counted either. A node whose ACL refuses INFO cannot be checked:
   * `onUnguardable` says so, and with `failOpen` its votes count unguarded
   * (otherwise they never count).
   */
  guardRestarts(guard: {
    window: () => number;
    atFirstContact: boolean;
    failOpen: boolean;
    onRestart: (node: LockNode, excludedFor: number) => void;
    onUnguardable: (node: LockNode, message: string) => void;
  }): () => void {
    const unverified = () => {
      this.excludedUntil = Infinity;
    };
    const check = () => {
      this.verified = this.client
        .info('server')
        .then((info) => {
          const window = guard.window();
          const runId = /run_id:(\w+)/.exec(info)?.[1];
          // Redis reports uptime as the difference of two whole-second clocks: a
          // server up for 30 ms can say 1. Only `reported - 1` s is certain.
          const reported = Number(/uptime_in_seconds:(\d+)/.exec(info)?.[1] ?? Infinity);
          const uptime = Math.max(0, reported - 1) * 1000;
          const restarted = this.runId !== undefined ? runId !== this.runId : guard.atFirstContact && uptime < window;
          this.runId = runId;
          this.excludedUntil = restarted ? performance.now() + window - uptime : 0;
          if (restarted) guard.onRestart(this, Math.max(0, window - uptime));
        })
        .catch((error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          if (!/NOPERM/i.test(message)) return; // stays unverified; the next reconnect checks again
          if (guard.failOpen) this.excludedUntil = 0;
          guard.onUnguardable(
            this,
            `the restart guard cannot read INFO server on ${this.label} (${message}); ` +
              (guard.failOpen ? 'its votes count without the guard' : 'its votes are not counted') +
              ': grant the ACL user +info',
          );
        });
    };
    unverified();
    this.client.on('close', unverified);
    this.client.on('ready', check);
    if (this.client.status === 'ready') check();
    return () => {
      this.client.off('close', unverified);
      this.client.off('ready', check);
    };
  }

  /**
   * Starts connecting a lazy client. Resolves true once it is ready, false when
   * its first connection failed; a user's client is never waited for.
   */
  connect(): Promise<boolean> {
    if (this.client.status === 'wait') this.client.connect().catch(() => undefined);
    // 'ready' listeners ran before these resolve: wait for the restart check and script load they started.
    const checked = () => Promise.all([this.verified, this.loaded]).then(() => true);
    if (!this.firstReady) {
      // A client passed in that is still connecting: its restart check runs once it is ready.
      if (this.client.status === 'ready') return checked();
      return new Promise<boolean>((resolve) => {
        const ready = () => (this.client.off('end', ended), resolve(checked()));
        const ended = () => (this.client.off('ready', ready), resolve(false));
        this.client.once('ready', ready);
        this.client.once('end', ended);
      });
    }
    return this.firstReady.then(checked, () => false);
  }

  /**
   * True while the node is hung: its oldest unanswered command has waited more
   * than `timeout` ms. Rounds then count it as a timeout at once instead of
   * queueing yet another command on its socket, so nothing piles up per call
   * while it hangs (rounds decided at quorum never wait for it either); it is
   * used again as soon as its backlog has been answered.
   */
  isStalled(timeout: number): boolean {
    for (const since of this.pending.values()) {
      const silent = performance.now() - since;
      if (silent <= timeout) return false;
      // Reported once per episode: the node is quiet again only once its backlog is answered.
      if (!this.hung) {
        this.hung = true;
        this.onHung?.(silent);
      }
      return true;
    }
    return false;
  }

  /** Calls `listener` when the node is first found hung (see `isStalled`), once until it answers again. */
  watchHung(listener: (silentFor: number) => void): void {
    this.onHung = listener;
  }

  /**
   * Runs `call` (a script, or SET NX) on this node and calls `done` once with its raw reply or error
   * (the call decodes it). `fallbackWithin`: ms after which a NOSCRIPT gets no EVAL (see `sendScript`).
   * With nothing in flight the command is written at once (no added latency);
   * otherwise the socket is corked until the end of this tick, so that the
   * commands of many concurrent locks share one write.
   */
  send(call: Call<unknown>, done: Done, fallbackWithin?: number): void {
    const fallbackUntil = fallbackWithin === undefined ? Infinity : performance.now() + fallbackWithin;
    let open = true;
    const settle: Done = (error, reply) => {
      if (!open) return;
      open = false;
      this.pending.delete(settle);
      if (this.pending.size === 0) this.hung = false;
      done(error, reply);
    };
    const corks = this.pending.size > 0;
    this.pending.set(settle, performance.now());
    // A write that throws (an argument the client cannot encode, a command too
    // large) fails this command only: its pending entry must not outlive it, or
    // the node would count as hung from then on.
    const write = (cork: boolean) => {
      try {
        this.write(call, settle, cork, fallbackUntil);
      } catch (error) {
        settle(error instanceof Error ? error : new Error(String(error)));
      }
    };
    if (this.firstReady && this.client.status !== 'ready') {
      this.firstReady.then(() => write(false), settle);
    } else {
      write(corks);
    }
  }

  private write(call: Call<unknown>, done: Done, cork: boolean, fallbackUntil: number): void {
    const stream = cork && this.kind === 'standalone' ? (this.client as Redis).stream : undefined;
    if (stream && !stream.writableCorked) {
      stream.cork();
      process.nextTick(() => stream.uncork());
    }
    const { command, keys, argv } = call;
    if (command !== SET_NX) return sendScript(this.client, command as Script, keys, argv, done, fallbackUntil);
    (this.client as Redis).set(keys[0]!, argv[0]!, 'PX', argv[1]!, 'NX').then(
      (reply) => done(undefined, reply),
      (error: unknown) => done(error ?? new Error('SET NX failed')),
    );
  }

  /** Fails every unanswered command (their connection is gone). */
  private failPending(error: Error): void {
    for (const fail of [...this.pending.keys()]) fail(error);
  }

  /**
   * Closes the connection if the lock client opened it (politely, but without
   * waiting more than `timeout` ms on a hung node); leaves the user's clients open.
   */
  /** Adds a listener to the client that close() removes (the user's clients outlive this node). */
  private listen(event: string, listener: (...args: any[]) => void): void {
    this.client.on(event, listener);
    this.listeners.push(() => this.client.off(event, listener));
  }

  async close(timeout: number): Promise<void> {
    for (const remove of this.listeners.splice(0)) remove();
    if (!this.owned) return;
    // Whoever still waits for the first connection (a hung node) stops waiting.
    this.abandonFirst?.(new Error(`connection to ${this.label} closed before it was ready`));
    if (this.client.status === 'ready') {
      let timer: NodeJS.Timeout | undefined;
      const quit = await Promise.race([
        this.client.quit().then(
          () => true,
          () => false,
        ),
        new Promise<false>((resolve) => (timer = setTimeout(resolve, timeout, false))),
      ]);
      clearTimeout(timer);
      // After a QUIT the server closes the socket; a disconnect() now would arm a
      // 2 s timer in ioredis that outlives the socket.
      if (quit) return;
    }
    this.client.disconnect();
  }
}

function identityOf(client: RedisClient, kind: ClientKind): string {
  if (kind === 'cluster') {
    const seeds = (client as unknown as { startupNodes: unknown[] }).startupNodes.map((n) =>
      typeof n === 'string' ? n : `${hostOf((n as { host?: string }).host)}:${(n as { port?: number }).port ?? 6379}`,
    );
    return `cluster(${seeds.sort().join(',')})`;
  }
  const { host, port, path, db } = (client as Redis).options;
  const where = path ? `unix:${path}` : `${hostOf(host)}:${port ?? 6379}`;
  return `${where}/${db ?? 0}`;
}

/**
 * One spelling per host, so that two names of one server are seen as one node:
 * case and a trailing dot dropped, IPv4 shorthand (`127.1`) and IPv4-mapped
 * IPv6 (`::ffff:127.0.0.1`) written out, and every loopback name and address
 * (`localhost`, 127.0.0.0/8, `::1`) taken as `127.0.0.1`: a server listening on
 * all interfaces answers on each of them.
 */
export function hostOf(host: string | undefined): string {
  if (!host) return '127.0.0.1';
  let name = host
    .toLowerCase()
    .replace(/\.$/, '')
    .replace(/^\[(.*)\]$/, '$1');
  try {
    // The URL parser writes IPv4 shorthand and IPv6 out in one canonical form.
    name = new URL(`http://${name.includes(':') ? `[${name}]` : name}`).hostname.replace(/^\[(.*)\]$/, '$1');
  } catch {
    return name;
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(name);
  if (mapped) {
    const [hi, lo] = [parseInt(mapped[1]!, 16), parseInt(mapped[2]!, 16)];
    name = `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  if (LOOPBACK.has(name) || /^127\.\d+\.\d+\.\d+$/.test(name)) return '127.0.0.1';
  return name;
}
