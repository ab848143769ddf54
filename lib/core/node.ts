import { inspect } from 'node:util';
import type { LockConnection, PrimaryInfo } from './connection.js';
import { connectionFor, type NodeSpec } from './clients/connection-for.js';
import { NODE_SCRIPTS, SET_NX, type Done } from './scripts.js';
import { NoscriptTooLateError, type Call, type Script } from './script.js';
import { CONNECT_WAIT } from './node-watch.js';
import { withoutCredentials } from './log-safe.js';

/** Ms after a failed restart check (not a refusal) before the next, while connected. */
const RECHECK_AFTER = 200;

/** A client's `state` once it will not connect on its own: ioredis `end` (closed), node-redis and GLIDE `closed` / `end`. */
const GONE_STATES = new Set(['end', 'closed']);

/** A server's eviction setting as the warning says it, if it may evict lock keys (see `watchEviction`). */
function evictionRisk({ address, info }: PrimaryInfo): string[] {
  const limit = Number(/^maxmemory:(\d+)/m.exec(info)?.[1] ?? 0);
  const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
  if (!(limit > 0 && policy && policy !== 'noeviction')) return [];
  return [`${address ? `${address}: ` : ''}maxmemory-policy ${policy}, maxmemory ${limit} bytes`];
}

/**
 * One node of the quorum: its connection, a log-safe label and what tells two
 * nodes apart. Knows how to run a command on its node, whether the node hangs
 * and whether it restarted; knows nothing of quorums, nor of client libraries
 * (its connection does: see `LockConnection`).
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
  /** When the window of the last restart seen ends (performance.now() ms): a reconnect to the same server does not end it. */
  private restartedUntil = 0;
  private runId: string | undefined;
  private verified: Promise<void> = Promise.resolve();
  /** The scripts loaded on the current connection (see NODE_SCRIPTS). */
  private loaded: Promise<void> = Promise.resolve();
  /** A reload after a late NOSCRIPT is under way: one at a time, however many calls found the scripts missing. */
  private reloading = false;
  /**
   * Commands given to this node and not yet answered (including those waiting
   * for the first connection), oldest first: each one's way to fail it, and
   * (at the same index) when it was given; the first says how long the node
   * has been silent. Arrays, not a Map, which would promote garbage at every
   * command (see bag.ts): replies come in order, so the answered command is
   * almost always the first, and its removal trims the arrays in place.
   */
  private readonly pending: Done[] = [];
  private readonly pendingSince: number[] = [];
  /** Removes the listeners this node added to its connection (see `listen`). */
  private readonly listeners: (() => void)[] = [];
  /** Found hung, and not answered everything since (see `isStalled`). */
  private hung = false;
  private onHung: ((silentFor: number) => void) | undefined;
  /** The connection's last error since it was last ready (a refused connect, a wrong password), log-safe. */
  private lastError: string | undefined;
  /** A client passed in: it was ready once since this node was made. */
  private wasReady = false;
  /** A client passed in: when the first wait for it began (performance.now()). */
  private firstWaitAt: number | undefined;
  /** `close()` ran: a client passed in is not waited for any more (no listener added after close). */
  private closed = false;
  /** A client passed in that is connecting: the one wait for it, shared by every call meanwhile (see connect). */
  private readyWait: { readonly promise: Promise<boolean>; readonly stop: () => void } | undefined;

  private constructor(
    readonly connection: LockConnection,
    readonly owned: boolean,
  ) {
    this.identity = connection.identity;
    this.label = this.identity;
    // A command in flight when the connection drops has an unknown outcome, and
    // the client never answers it (ioredis would only by resending it after the
    // reconnect, off for the connections this client opens): fail it now, or it
    // would hang forever and keep the node counted as hung.
    this.listen('lost', () => this.failPending(new Error(`connection to ${this.label} closed before it answered`)));
    const load = () => {
      this.loaded = connection.loadScripts(NODE_SCRIPTS);
    };
    this.listen('ready', load);
    if (connection.isReady) load();
    this.listeners.push(connection.on('error', (error) => (this.lastError = withoutCredentials(String(error?.message ?? error)))));
    this.listen('ready', () => (this.lastError = undefined));
    if (!owned) {
      this.wasReady = connection.isReady;
      this.listen('ready', () => (this.wasReady = true));
    }
    if (owned) {
      // Until the first connection is up, wait for it instead of failing at once
      // (offline queue is off); after a first failure, fail fast like a down node.
      this.firstReady = new Promise<void>((resolve, reject) => {
        this.abandonFirst = reject;
        const offReady = connection.on('ready', () => (offReady(), offError(), resolve()));
        const offError = connection.on('error', (error) => (offReady(), offError(), reject(error)));
      });
      this.firstReady.catch(() => undefined);
    }
  }

  static from(spec: NodeSpec): LockNode {
    const { connection, owned } = connectionFor(spec);
    return new LockNode(connection, owned);
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
      this.verified = this.connection
        .info()
        .then((info) => {
          const window = guard.window();
          const runId = /run_id:(\w+)/.exec(info)?.[1];
          // Redis reports uptime as the difference of two whole-second clocks: a
          // server up for 30 ms can say 1. Only `reported - 1` s is certain.
          const reported = Number(/uptime_in_seconds:(\d+)/.exec(info)?.[1] ?? Infinity);
          const uptime = Math.max(0, reported - 1) * 1000;
          const newRunId = this.runId !== undefined && runId !== this.runId;
          const restarted = newRunId || (this.runId === undefined && guard.atFirstContact && uptime < window);
          // After a failover the new primary's uptime is its age, not when it lost the keys the old one had.
          const lostAgo = newRunId && this.connection.failsOver ? 0 : uptime;
          this.runId = runId;
          if (restarted) this.restartedUntil = performance.now() + window - lostAgo;
          // The same run id after a blip (or a reconnect of every client of a Sentinel set) is no
          // news: a window still running from an earlier restart or failover keeps the node out.
          this.excludedUntil = this.restartedUntil;
          if (restarted) guard.onRestart(this, Math.max(0, window - lostAgo));
        })
        .catch((error: unknown) => {
          const message = error instanceof Error ? error.message : String(error);
          // Not a refusal but a failure (a server still loading, a timeout): the node stays
          // unverified, so out of quorums, until a check succeeds. Checked again soon while
          // connected, or it would stay out until its next reconnect, however long that is.
          if (!/NOPERM/i.test(message)) return recheckLater();
          if (guard.failOpen) this.excludedUntil = 0;
          guard.onUnguardable(
            this,
            `the restart guard cannot read INFO server on ${this.label} (${message}); ` +
              (guard.failOpen ? 'its votes count without the guard' : 'its votes are not counted') +
              ': grant the ACL user +info',
          );
        });
    };
    let recheck: NodeJS.Timeout | undefined;
    const recheckLater = () => {
      clearTimeout(recheck);
      recheck = setTimeout(() => this.connection.isReady && check(), RECHECK_AFTER).unref();
    };
    unverified();
    const offLost = this.connection.on('lost', unverified);
    const offReady = this.connection.on('ready', check);
    if (this.connection.isReady) check();
    return () => (offLost(), offReady(), clearTimeout(recheck));
  }

  /**
   * Calls `onRisk` when a server of this node may evict keys before their ttl:
   * a memory limit (`maxmemory`) with any policy but `noeviction`. Every
   * `volatile-*` policy evicts keys that have a ttl, which every lock key has
   * (`volatile-ttl` the shortest-lived first): a lock key evicted lets another
   * holder in on that node, with no crash or clock at fault. Read from `INFO
   * memory` of every primary (a cluster's masters each have their own policy)
   * at each connection (a failover's new primary may be set up otherwise);
   * told once per setting. The answers are told together when all have come,
   * or CONNECT_WAIT ms after the reads began: a master that hangs (or is down,
   * its INFO queued until it is back) does not keep the others' risk unsaid,
   * and its own is told when its answer comes. A refused INFO says nothing
   * here (the restart guard reports it); a cluster's masters added later are
   * read at its next connection.
   */
  watchEviction(onRisk: (node: LockNode, message: string) => void): () => void {
    let told = '';
    let stopped = false;
    // One per check still waiting for its reads: a reconnect's check does not cut short an earlier one's.
    const waits = new Set<NodeJS.Timeout>();
    const check = () => {
      const reads = this.connection.primaryInfos('memory');
      // Each read's risky servers, in the order of the reads: the message stays the same whatever answers first.
      const risky: (readonly string[])[] = reads.map(() => []);
      let unanswered = reads.length;
      let answered = false;
      let waited = false;
      const tell = () => {
        if (stopped || !answered) return;
        const setting = risky.flat().join('; ');
        if (setting && setting !== told) {
          onRisk(
            this,
            `may evict lock keys before their ttl under memory pressure (${setting}): ` +
              'an evicted lock lets a second holder in. Set maxmemory-policy noeviction on the lock nodes',
          );
        }
        told = setting;
      };
      const wait = setTimeout(() => {
        waits.delete(wait);
        waited = true;
        tell();
      }, CONNECT_WAIT).unref();
      waits.add(wait);
      reads.forEach((read, i) => {
        void read
          .then(
            (infos) => {
              risky[i] = infos.flatMap(evictionRisk);
              answered = true;
            },
            () => undefined,
          )
          .finally(() => {
            if (--unanswered === 0) {
              clearTimeout(wait);
              waits.delete(wait);
            }
            if (unanswered === 0 || waited) tell();
          });
      });
    };
    const off = this.connection.on('ready', check);
    if (this.connection.isReady) check();
    return () => {
      stopped = true;
      waits.forEach(clearTimeout);
      off();
    };
  }

  /**
   * Starts connecting a lazy client. Resolves true once it is ready, false when
   * its first connection failed; a user's client is never waited for.
   */
  connect(): Promise<boolean> {
    this.connection.connect();
    // 'ready' listeners ran before these resolve: wait for the restart check and script load they started.
    const checked = () => Promise.all([this.verified, this.loaded]).then(() => true);
    if (!this.firstReady) {
      // A client passed in that is still connecting: its restart check runs once it is ready.
      if (this.connection.isReady) return checked();
      // One the application closed, or a node-redis client it never connected: no event will come (the
      // first call waited CONNECT_WAIT for one), and it counts as down now, as the README says.
      if (this.closed || GONE_STATES.has(this.connection.state)) return Promise.resolve(false);
      // One that failed since it was last ready (a node gone down), or that failed and has had the
      // first wait's time to connect, counts as down now: every call waited CONNECT_WAIT for it.
      // Failing in its first connection (a server still starting), it is waited for as before.
      const hadItsChance = this.wasReady || (this.firstWaitAt !== undefined && performance.now() - this.firstWaitAt >= CONNECT_WAIT);
      if (this.lastError !== undefined && hadItsChance) return Promise.resolve(false);
      this.firstWaitAt ??= performance.now();
      return this.waitForReady(checked);
    }
    return this.firstReady.then(checked, () => false);
  }

  /**
   * Waits for a client passed in to be ready (or to end, or until CONNECT_WAIT
   * after the first wait began): one wait however many calls come meanwhile
   * (every ping, inspect or new lock client would add listeners to the
   * application's client, each keeping a closed lock client alive, for as long
   * as the node stays down); `close()` ends it.
   */
  private waitForReady(checked: () => Promise<boolean>): Promise<boolean> {
    if (this.readyWait) return this.readyWait.promise;
    let finish!: (ready: boolean) => void;
    const ended = new Promise<boolean>((resolve) => (finish = resolve));
    // No longer than the first call's wait from the first one on: `ready()` (which waits for every
    // node to connect or fail once) would otherwise wait for ever for a client that never connects.
    const timer = setTimeout(() => end(false), Math.max(0, CONNECT_WAIT - (performance.now() - (this.firstWaitAt ?? 0))));
    timer.unref();
    const offs = [this.connection.on('ready', () => end(true)), this.connection.on('end', () => end(false)), () => clearTimeout(timer)];
    const wait = { promise: ended.then((ready) => (ready ? checked() : false)), stop: () => end(false) };
    const end = (ready: boolean) => {
      if (this.readyWait !== wait) return;
      this.readyWait = undefined;
      for (const off of offs) off();
      finish(ready);
    };
    this.readyWait = wait;
    return wait.promise;
  }

  /**
   * True while the node is hung: its oldest unanswered command has waited more
   * than `timeout` ms. Rounds then count it as a timeout at once instead of
   * queueing yet another command on its socket, so nothing piles up per call
   * while it hangs (rounds decided at quorum never wait for it either); it is
   * used again as soon as its backlog has been answered.
   */
  isStalled(timeout: number): boolean {
    const since = this.pendingSince[0];
    if (since === undefined) return false;
    const silent = performance.now() - since;
    if (silent <= timeout) return false;
    // Reported once per episode: the node is quiet again only once its backlog is answered.
    if (!this.hung) {
      this.hung = true;
      this.onHung?.(silent);
    }
    return true;
  }

  /**
   * A command's failure on a connection that is not ready, said as such first,
   * with the connection's last error: the client's own words name only the
   * symptom (ioredis: "Stream isn't writeable" for a node it is reconnecting
   * to), where the last error says why (a wrong password, a refused connect).
   * An adapter's refusal of a command while a client passed in reconnects
   * (`not connected (reconnecting)`) gets the last error inside its parentheses.
   */
  explain(error: Error): Error {
    if (this.connection.isReady) return error;
    const why = this.lastError && !error.message.includes(this.lastError) ? `; last error: ${this.lastError}` : '';
    const refused = /^not connected \(([^)]*)\)/.exec(error.message);
    if (refused) return why ? new Error(`not connected (${refused[1]}${why})${error.message.slice(refused[0].length)}`) : error;
    return new Error(`not connected (${this.connection.state}${why}): ${error.message}`);
  }

  /** Calls `listener` when the node is first found hung (see `isStalled`), once until it answers again. */
  watchHung(listener: (silentFor: number) => void): void {
    this.onHung = listener;
  }

  /**
   * Runs `call` (a script, or SET NX) on this node and calls `done` once with its raw reply or error
   * (the call decodes it). `fallbackWithin`: ms after which a NOSCRIPT gets no EVAL (see `LockConnection.evalsha`).
   * The connection batches the writes of this tick (see `LockConnection.evalsha`),
   * so that the commands of many concurrent locks share one write; the first
   * one too, even to a node with nothing in flight: written alone, it doubled
   * the writes of every burst at 64 callers (a corked socket's write waits for
   * a `process.nextTick`, no measurable latency on an uncontended lock).
   */
  send(call: Call<unknown>, done: Done, fallbackWithin?: number): void {
    const fallbackUntil = fallbackWithin === undefined ? Infinity : performance.now() + fallbackWithin;
    let open = true;
    const settle: Done = (error, reply) => {
      if (!open) return;
      open = false;
      this.forget(settle);
      if (this.pending.length === 0) this.hung = false;
      if (error instanceof NoscriptTooLateError) this.reloadScripts();
      done(error instanceof Error && !this.connection.isReady ? this.explain(error) : error, reply);
    };
    this.pending.push(settle);
    this.pendingSince.push(performance.now());
    if (this.firstReady && !this.connection.isReady) {
      this.firstReady.then(() => this.write(call, settle, fallbackUntil), settle);
    } else {
      this.write(call, settle, fallbackUntil);
    }
  }

  /**
   * Writes one command of `send`. A write that throws (an argument the client
   * cannot encode, a command too large) fails this command only: its pending
   * entry must not outlive it, or the node would count as hung from then on.
   */
  private write(call: Call<unknown>, settle: Done, fallbackUntil: number): void {
    try {
      const { command, keys, argv } = call;
      if (command === SET_NX) this.connection.setNx(keys[0]!, argv[0]!, argv[1]!, settle);
      else this.connection.evalsha(command as Script, keys, argv, settle, fallbackUntil);
    } catch (error) {
      settle(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /**
   * Loads them again after a NOSCRIPT that came too late for its EVAL (a flushed
   * or restarted node, a cluster shard failed over, slower than the node timeout
   * for now): without it the node would lack them until a NOSCRIPT came in time.
   */
  private reloadScripts(): void {
    if (this.reloading) return;
    this.reloading = true;
    void this.connection.loadScripts(NODE_SCRIPTS).finally(() => (this.reloading = false));
  }

  /** Fails every unanswered command (their connection is gone). */
  private failPending(error: Error): void {
    for (const fail of this.pending.slice()) fail(error);
  }

  /** Takes an answered (or failed) command out of `pending`. */
  private forget(settle: Done): void {
    const at = this.pending.indexOf(settle);
    if (at === 0) {
      this.pending.shift();
      this.pendingSince.shift();
    } else if (at > 0) {
      this.pending.splice(at, 1);
      this.pendingSince.splice(at, 1);
    }
  }

  /** Adds a listener to the connection that close() removes (the user's clients outlive this node). */
  private listen(event: 'ready' | 'lost', listener: () => void): void {
    this.listeners.push(this.connection.on(event, listener));
  }

  /**
   * Closes the connection if the lock client opened it (politely, but without
   * waiting more than `timeout` ms on a hung node); leaves the user's clients open.
   */
  async close(timeout: number): Promise<void> {
    this.closed = true;
    for (const remove of this.listeners.splice(0)) remove();
    this.readyWait?.stop();
    if (!this.owned) return;
    // Whoever still waits for the first connection (a hung node) stops waiting.
    this.abandonFirst?.(new Error(`connection to ${this.label} closed before it was ready`));
    if (this.connection.isReady) {
      let timer: NodeJS.Timeout | undefined;
      const quit = await Promise.race([
        this.connection.quit(),
        new Promise<false>((resolve) => (timer = setTimeout(resolve, timeout, false))),
      ]);
      clearTimeout(timer);
      // After a QUIT the server closes the socket; a disconnect() now would arm a
      // 2 s timer in ioredis that outlives the socket.
      if (quit) return;
    }
    this.connection.disconnect();
  }
}

export type { NodeSpec };
