/** How often a GLIDE connection's server is asked for its run id, ms. */
export const GLIDE_HEARTBEAT = 100;

type GlideEvent = 'ready' | 'lost' | 'end' | 'error';

/**
 * The connection events a GLIDE client does not give. GLIDE reconnects inside
 * its Rust core and reports neither the drop nor the reconnect (its issue
 * #2164): a command in flight when the connection drops fails with a
 * `ConnectionError`, but a server that restarts while nothing is in flight is
 * reached again silently, keys lost, with no error at all. So the adapter
 * infers the events: `lost` from a `ConnectionError` (any command's, or its
 * own probe's), `ready` when a probe answers again, and a silent restart from
 * the server's run id, read by `INFO server` every `GLIDE_HEARTBEAT` ms while
 * anyone listens: a new run id is a `lost` then a `ready`, which sends the
 * restart guard to check the node. What this cannot see is a command that
 * reaches a restarted server in the few ms before the next probe.
 */
export class GlideLiveness {
  /**
   * `reconnecting`: the connection dropped (`lost` was emitted); `unreachable`:
   * the node stopped answering in time, whether the connection dropped unknown.
   */
  #state: 'ready' | 'reconnecting' | 'unreachable' | 'end' = 'ready';
  #runId: string | undefined;
  /** INFO refused (an ACL without +info): PING says whether the node answers, not whether it restarted. */
  #infoRefused = false;
  #timer: NodeJS.Timeout | undefined;
  #probing = false;
  /** An error was reported since the node was last ready (see `failed`). */
  #reported = false;
  readonly #listeners = new Map<GlideEvent, Set<(error?: Error) => void>>();

  constructor(
    /** `INFO server`, or PING when `info` is false. */
    private readonly probe: (info: boolean) => Promise<unknown>,
    /** A cluster's shards reconnect on their own: only the client's end is reported. */
    private readonly heartbeat: boolean,
  ) {}

  get state(): string {
    return this.#state;
  }

  on(event: GlideEvent, listener: (error?: Error) => void): () => void {
    let set = this.#listeners.get(event);
    if (!set) this.#listeners.set(event, (set = new Set()));
    set.add(listener);
    // The first probe at once: the run id a later one compares with must be the one of now.
    this.schedule(this.#runId === undefined ? 0 : GLIDE_HEARTBEAT);
    return () => {
      set.delete(listener);
      if (!this.listened) this.stop();
    };
  }

  /** What a command's failure says about the connection. */
  commandFailed(error: unknown): void {
    if (isClosing(error)) this.end();
    else if (isDisconnect(error)) this.drop();
  }

  /** The user closed the client: no more events, no more probes. */
  private end(): void {
    if (this.#state === 'end') return;
    this.#state = 'end';
    this.stop();
    this.emit('end');
  }

  private get listened(): boolean {
    for (const set of this.#listeners.values()) if (set.size > 0) return true;
    return false;
  }

  private drop(): void {
    if (this.#state === 'reconnecting' || this.#state === 'end') return;
    this.#state = 'reconnecting';
    this.emit('lost');
    this.schedule(0);
  }

  private schedule(delay = GLIDE_HEARTBEAT): void {
    if (!this.heartbeat || this.#timer || this.#probing || this.#state === 'end' || !this.listened) return;
    this.#timer = setTimeout(() => this.tick(), delay);
    this.#timer.unref();
  }

  private stop(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  private tick(): void {
    this.#timer = undefined;
    this.#probing = true;
    this.probe(!this.#infoRefused).then(
      (reply) => {
        this.#probing = false;
        this.answered(typeof reply === 'string' ? /run_id:(\w+)/.exec(reply)?.[1] : undefined);
        this.schedule();
      },
      (error: unknown) => {
        this.#probing = false;
        this.failed(error);
        this.schedule();
      },
    );
  }

  private answered(runId: string | undefined): void {
    const restarted = runId !== undefined && this.#runId !== undefined && runId !== this.#runId;
    if (runId !== undefined) this.#runId = runId;
    if (this.#state === 'end' || (this.#state === 'ready' && !restarted)) return;
    // A new server behind a connection GLIDE replaced unseen: as if the drop had been seen.
    if (restarted && this.#state !== 'reconnecting') this.emit('lost');
    this.#state = 'ready';
    this.#reported = false;
    this.emit('ready');
  }

  private failed(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    if (/NOPERM/i.test(message)) {
      this.#infoRefused = true;
      return;
    }
    const dropped = this.#state === 'reconnecting';
    this.commandFailed(error);
    if (this.#state === 'ready') {
      // A timeout: the node is down or hung (GLIDE is reconnecting, or waits); whether the
      // connection dropped is unknown, so commands in flight keep their own timeouts.
      this.#state = 'unreachable';
    } else if (!dropped || this.#reported) {
      // The drop itself (reported as lost), the end, or a node reported already.
      return;
    }
    // Or a probe after a drop failed: GLIDE cannot reconnect (the node is down), which
    // ioredis reports as an error too. Unreported, the node was never said to be down,
    // and each listing waited for it as for a client still connecting.
    this.#reported = true;
    this.emit('error', error instanceof Error ? error : new Error(message));
  }

  private emit(event: GlideEvent, error?: Error): void {
    for (const listener of [...(this.#listeners.get(event) ?? [])]) listener(error);
  }
}

/** GLIDE's `ClosingError`: the client was closed (by its user, or after a fatal error). */
function isClosing(error: unknown): boolean {
  return error instanceof Error && error.name === 'ClosingError';
}

/** GLIDE's `ConnectionError`: the connection dropped under the command (GLIDE is reconnecting). */
function isDisconnect(error: unknown): boolean {
  return error instanceof Error && error.name === 'ConnectionError';
}
