import { later } from '../later.js';
import type { Done } from '../script.js';
import type { GlideClientLike } from './glide.connection.js';

/** A GLIDE client's part that runs batches (see `GlideBatcher`). */
type GlideBatchRunner = Pick<GlideClientLike, 'customCommand' | 'exec'>;

/** GLIDE's non-atomic `Batch` or `ClusterBatch` (a pipeline), as far as this file uses it. */
type BatchClass = new (isAtomic: false) => { customCommand(args: string[]): unknown };

interface Queued {
  readonly args: string[];
  readonly done: Done;
}

/**
 * Sends the commands of one tick to one GLIDE client as one pipeline (a
 * non-atomic `Batch`, or `ClusterBatch`, whose commands GLIDE routes to their
 * shards one by one): the GLIDE counterpart of corking an ioredis socket.
 * GLIDE's cost is per request far more than per command (each request crosses
 * from JavaScript to its native core and back, protobuf both ways): on one
 * node, a pipeline of 16 SETs cost 0.4x the client CPU per command of 16
 * concurrent `customCommand`s, and one of 64 under a third.
 *
 * Batches need the `Batch` class of the package copy the client comes from.
 * The library never imports GLIDE on its own account; it loads the package
 * once a GLIDE client is passed, and batches only when that client is an
 * instance of the loaded copy's `GlideClient` or `GlideClusterClient`. A
 * client of another copy (or one the library cannot load) gets one request
 * per command, as before.
 */
export class GlideBatcher {
  // The client's configuration holds the node's credentials: truly private, as in GlideConnection.
  readonly #client: GlideBatchRunner;
  readonly #options: object;
  #Batch: BatchClass | undefined;
  #queued: Queued[] | undefined;
  /** Settles (never rejects) once it is known whether batches can be made. */
  readonly loaded: Promise<void>;

  constructor(client: GlideBatchRunner, options: object) {
    this.#client = client;
    this.#options = options;
    this.loaded = batchClassOf(client).then((Batch) => void (this.#Batch = Batch));
  }

  /**
   * Sends `args` in this tick's pipeline (the first command of a tick starts
   * one, sent at `process.nextTick`), `done` called once with its reply or
   * error; false when no pipeline can be made (a client of another copy).
   */
  add(args: string[], done: Done): boolean {
    if (!this.#Batch) return false;
    if (!this.#queued) {
      this.#queued = [];
      later(() => this.flush());
    }
    this.#queued.push({ args, done });
    return true;
  }

  private flush(): void {
    const queued = this.#queued!;
    this.#queued = undefined;
    const fail = (error: unknown) => queued.forEach((q) => q.done(error ?? new Error('GLIDE pipeline failed')));
    try {
      if (queued.length === 1) {
        // One command goes as it is: a batch of one measured about the same.
        const [only] = queued as [Queued];
        this.#client.customCommand(only.args, this.#options).then((reply) => only.done(undefined, reply), fail);
        return;
      }
      const batch = new this.#Batch!(false);
      for (const { args } of queued) batch.customCommand(args);
      // raiseOnError false: a command's error (NOSCRIPT) comes back in its place, the others' replies stand.
      this.#client.exec!(batch, false, this.#options).then((replies) => {
        if (!Array.isArray(replies) || replies.length !== queued.length)
          return fail(new Error('GLIDE answered a pipeline with an unexpected reply'));
        queued.forEach((q, i) => (replies[i] instanceof Error ? q.done(replies[i]) : q.done(undefined, replies[i])));
      }, fail);
    } catch (error) {
      fail(error); // nothing escapes the tick: every command gets an answer
    }
  }
}

/** The loaded GLIDE copy's batch class for `client`, when it is a client of that copy. */
async function batchClassOf(client: GlideBatchRunner): Promise<BatchClass | undefined> {
  if (typeof client.exec !== 'function') return undefined;
  try {
    const loaded = (await import('@valkey/valkey-glide')) as unknown as GlideExports & { default?: GlideExports };
    const glide = typeof loaded.GlideClient === 'function' ? loaded : loaded.default;
    const of = (Client: GlideExports['GlideClient'], Batch: BatchClass | undefined) =>
      typeof Client === 'function' && client instanceof Client && typeof Batch === 'function' ? Batch : undefined;
    return of(glide?.GlideClient, glide?.Batch) ?? of(glide?.GlideClusterClient, glide?.ClusterBatch);
  } catch {
    return undefined; // not loadable from here: one request per command
  }
}

interface GlideExports {
  GlideClient?: abstract new (...args: never[]) => object;
  GlideClusterClient?: abstract new (...args: never[]) => object;
  Batch?: BatchClass;
  ClusterBatch?: BatchClass;
}
