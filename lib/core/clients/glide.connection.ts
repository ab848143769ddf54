import type { LockConnection, PrimaryInfo, ScanStep, Subscription } from '../connection.js';
import { scriptFailed, type Done, type Script, type ScriptRunner } from '../script.js';
import { GlideBatcher } from './glide-batch.js';
import { clusterPrimaries, type GlidePrimary } from './glide-primaries.js';
import { glideScanners } from './glide-scan.js';
import { GlideLiveness } from './glide-liveness.js';
import { glideSubscription } from './glide-subscriber.js';
import { hostOf } from './host.js';
import { quietly } from './settle.js';

/**
 * A Valkey GLIDE client (`GlideClient` or `GlideClusterClient` of
 * `@valkey/valkey-glide`) of any copy of the package, typed by shape: GLIDE
 * is an optional peer the application brings, loaded only once such a client
 * is passed, and then only to pipeline (see `GlideBatcher`).
 */
export interface GlideClientLike {
  customCommand(args: any[], options?: any): Promise<unknown>;
  invokeScript(...args: any[]): Promise<unknown>;
  exec?(batch: object, raiseOnError: boolean, options?: object): Promise<unknown[] | null>;
  close(errorMessage?: string): void;
}

/**
 * True for a GLIDE client of any copy of the package, told by shape: the
 * command and script entry points no other client library has, and the
 * static `createClient` a dedicated subscriber connection is made with.
 */
export function isGlide(client: object): client is GlideClientLike {
  const c = client as Partial<Record<'customCommand' | 'invokeScript' | 'close' | 'getStatistics', unknown>>;
  const factory = (client.constructor as { createClient?: unknown } | undefined)?.createClient;
  return (
    typeof c.customCommand === 'function' &&
    typeof c.invokeScript === 'function' &&
    typeof c.close === 'function' &&
    typeof c.getStatistics === 'function' &&
    typeof factory === 'function'
  );
}

/** `Decoder.String`: replies as strings whatever the client's default decoder (the scripts' replies are read as such). */
const AS_STRINGS = { decoder: 1 } as const;

/** The part of a GLIDE client's configuration this adapter reads (see `configOf`). */
interface GlideConfig {
  addresses?: { host?: string; port?: number }[];
  databaseId?: number;
  [setting: string]: unknown;
}

/**
 * A node reached through Valkey GLIDE. Scripts go through `customCommand`
 * (EVALSHA, then EVAL on NOSCRIPT) rather than GLIDE's `Script` and
 * `invokeScript`: those send the script text themselves on NOSCRIPT, with no
 * way to say "not after this deadline", and the core must be able to refuse
 * that EVAL once it counted the node as timed out (see `LockConnection.evalsha`).
 */
export class GlideConnection implements LockConnection {
  readonly identity: string;
  readonly isCluster: boolean;
  /** A standalone client given a primary and its replicas follows the primary when another is promoted. */
  readonly failsOver: boolean;
  // The client's configuration holds the node's credentials: truly private.
  readonly #client: GlideClientLike;
  readonly #liveness: GlideLiveness;
  /** EVAL, the NOSCRIPT fallback (EVALSHA goes by `send`). */
  readonly #eval: Pick<ScriptRunner, 'eval'>;
  /** Pipelines the commands of a tick (clients of the copy the library can load). */
  readonly #batcher: GlideBatcher;
  /** A cluster would send INFO and PING to every node and answer with a map: one node answers, as with ioredis. */
  readonly #anyNode: object;

  constructor(client: GlideClientLike) {
    this.#client = client;
    this.isCluster = typeof (client as { invokeScriptWithRoute?: unknown }).invokeScriptWithRoute === 'function';
    this.identity = glideIdentity(configOf(client), this.isCluster);
    this.failsOver = !this.isCluster && (configOf(client)?.addresses?.length ?? 0) > 1;
    this.#anyNode = this.isCluster ? { ...AS_STRINGS, route: 'randomNode' } : AS_STRINGS;
    this.#batcher = new GlideBatcher(client, AS_STRINGS);
    this.#liveness = new GlideLiveness((info) => this.command(info ? ['INFO', 'server'] : ['PING']), !this.isCluster);
    this.#eval = { eval: (lua, numKeys, ...rest) => this.command(['EVAL', lua, String(numKeys), ...rest.map(String)]) };
  }

  get isReady(): boolean {
    return this.#liveness.state === 'ready';
  }

  get state(): string {
    return this.#liveness.state;
  }

  evalsha(script: Script, keys: readonly string[], argv: readonly string[], done: Done, fallbackUntil: number): void {
    this.send(['EVALSHA', script.sha, String(keys.length), ...keys, ...argv], AS_STRINGS, (error, reply) =>
      error === undefined
        ? done(undefined, reply)
        : scriptFailed(noscriptWorded(error), this.#eval, script, keys, argv, done, fallbackUntil),
    );
  }

  setNx(key: string, value: string, ttl: string, done: Done): void {
    this.send(['SET', key, value, 'PX', ttl, 'NX'], AS_STRINGS, done);
  }

  loadScripts(scripts: readonly Script[]): Promise<void> {
    // On a cluster, every primary: a shard added later loads a script at its first NOSCRIPT.
    const options = this.isCluster ? { ...AS_STRINGS, route: 'allPrimaries' } : AS_STRINGS;
    const loaded = quietly(Promise.all(scripts.map((script) => this.#client.customCommand(['SCRIPT', 'LOAD', script.lua], options))));
    // And whether pipelines can be made known: once `ready()` resolves, the first burst is pipelined.
    return Promise.all([loaded, this.#batcher.loaded]).then(() => undefined);
  }

  scanners(): readonly ScanStep[] {
    return glideScanners((args, options) => this.command(args, options), this.isCluster, AS_STRINGS, this.#seeds());
  }

  info(section: 'server' | 'memory' = 'server'): Promise<string> {
    return this.command(['INFO', section], this.#anyNode).then(String);
  }

  primaryInfos(section: 'memory'): readonly Promise<readonly PrimaryInfo[]>[] {
    if (!this.isCluster) return [this.info(section).then((info) => [{ info }])];
    // Not through the tick's pipeline, which routes to one node.
    const read = (route: unknown) => this.#client.customCommand(['INFO', section], { ...AS_STRINGS, route });
    // One request reads every primary, one reply per address. It fails as a whole when one primary
    // does not answer within GLIDE's request timeout (hung, or down): then each is read on its own.
    const one = async (primary: GlidePrimary) => ({
      address: `${primary.host}:${primary.port}`,
      info: String(await read({ type: 'routeByAddress', ...primary })),
    });
    return [
      read('allPrimaries').then(
        (replies) => byAddress(replies).map(([address, info]) => ({ address, info: String(info) })),
        async () => {
          const primaries = await clusterPrimaries((args, options) => this.command(args, options), AS_STRINGS, this.#seeds());
          const reads = await Promise.allSettled(primaries.map(one));
          return reads.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        },
      ),
    ];
  }

  /** The addresses the client was given, as routes name them. */
  #seeds(): GlidePrimary[] {
    return (configOf(this.#client)?.addresses ?? []).map((a) => ({ host: a.host ?? 'localhost', port: a.port ?? 6379 }));
  }

  ping(): Promise<string> {
    return this.command(['PING'], this.#anyNode).then(String);
  }

  on(event: 'ready' | 'lost' | 'end' | 'error', listener: (error?: any) => void): () => void {
    return this.#liveness.on(event, listener);
  }

  /**
   * GLIDE subscribes at client creation (`pubsubSubscriptions`, with a
   * callback): a dedicated client is created with the user client's own
   * configuration (addresses, database, TLS, credentials), read from it. A
   * client whose configuration cannot be read gets no subscription: its
   * waiters poll (see `WakeNotifier`).
   */
  subscribe(channel: string, onMessage: (message: string) => void): Subscription {
    const factory = (this.#client.constructor as { createClient?: (config: object) => Promise<GlideClientLike> }).createClient;
    const config = configOf(this.#client);
    if (typeof factory !== 'function' || !config) return { confirmed: Promise.resolve(), close: () => undefined };
    return glideSubscription((settings) => factory.call(this.#client.constructor, settings), config, channel, onMessage);
  }

  connect(): void {
    // A GLIDE client is connected by createClient (or, created lazily, by its first command).
  }

  /** The lock client never opens a GLIDE client, so never closes one; closing is the user's. */
  quit(): Promise<boolean> {
    this.#client.close();
    return Promise.resolve(true);
  }

  disconnect(): void {
    this.#client.close();
  }

  /** `send` as a promise, for the paths off the lock's hot path. */
  private command(args: string[], options: object = AS_STRINGS): Promise<unknown> {
    return new Promise((resolve, reject) =>
      this.send(args, options, (error, reply) => (error === undefined ? resolve(reply) : reject(error))),
    );
  }

  /**
   * One command, replies as strings; `done` called once with its reply or
   * error, and what a failure says about the connection goes to the liveness
   * watch. Callback style, as `sendScript`: no promise of its own on the
   * lock's hot path. The command goes in its tick's pipeline (see
   * `GlideBatcher`), whatever sends it: GLIDE pays per request.
   */
  private send(args: string[], options: object, done: Done): void {
    const answer: Done = (error, reply) => {
      if (error !== undefined) this.#liveness.commandFailed(error);
      done(error, reply);
    };
    if (options === AS_STRINGS && this.#batcher.add(args, answer)) return;
    this.#client.customCommand(args, options).then(
      (reply) => answer(undefined, reply),
      (error: unknown) => answer(error ?? new Error(`${args[0]} failed`)),
    );
  }
}

/**
 * The configuration the client was created with. GLIDE keeps it in a field it
 * declares private (`config`), and offers no accessor: read by shape, and
 * tolerated absent (identity from nothing, no subscription).
 */
function configOf(client: GlideClientLike): GlideConfig | undefined {
  const config = (client as unknown as { config?: unknown }).config;
  return typeof config === 'object' && config !== null ? (config as GlideConfig) : undefined;
}

function glideIdentity(config: GlideConfig | undefined, isCluster: boolean): string {
  const addresses = (config?.addresses ?? []).map((a) => `${hostOf(a.host)}:${a.port ?? 6379}`).sort();
  if (isCluster) return `cluster(${addresses.join(',')})`;
  // Standalone GLIDE takes a primary and its replicas: one address is the common case, and reads as ioredis's.
  return `${addresses.join(',') || '127.0.0.1:6379'}/${config?.databaseId ?? 0}`;
}

/** GLIDE words NOSCRIPT as "... NoScriptError: No matching script ..."; the core knows Redis's word. */
function noscriptWorded(error: unknown): unknown {
  if (error instanceof Error && /NoScriptError/.test(error.message) && !error.message.startsWith('NOSCRIPT')) {
    return new Error(`NOSCRIPT ${error.message}`, { cause: error });
  }
  return error;
}

/**
 * A cluster's reply from several nodes as [address, reply] pairs: a record by
 * address (GLIDE's `ClusterResponse`), a `GlideRecord` (`{ key, value }[]`) or
 * a Map, as versions give it.
 */
function byAddress(replies: unknown): [string, unknown][] {
  if (replies instanceof Map) return [...replies].map(([key, value]) => [String(key), value]);
  if (Array.isArray(replies)) return replies.map((entry: { key: unknown; value: unknown }) => [String(entry.key), entry.value]);
  if (typeof replies === 'object' && replies !== null) return Object.entries(replies);
  return [['', replies]];
}
