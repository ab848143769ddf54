import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback between a worker and one lock node, for two faults:
 *
 * - `latency(targetPort, min, max)`: every chunk, in both directions, is
 *   forwarded after a random delay in [min, max] ms, never before the chunk
 *   that came before it (byte order kept, so RESP stays intact).
 * - `blackhole()`: accepts connections and never answers nor forwards
 *   anything (a partitioned path: the client sees timeouts, not refusals).
 *   `silence()` turns a latency proxy into one: its connections are cut, and
 *   the client's reconnects hang.
 *
 * Loopback only; `stop()` destroys every socket it holds.
 */
export class TcpProxy {
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private server!: Server;
  private silent = false;
  port = 0;

  private constructor(
    private readonly targetPort: number | undefined,
    private readonly minMs: number,
    private readonly maxMs: number,
  ) {}

  static latency(targetPort: number, minMs: number, maxMs: number): Promise<TcpProxy> {
    return new TcpProxy(targetPort, minMs, maxMs).listen();
  }

  static blackhole(): Promise<TcpProxy> {
    return new TcpProxy(undefined, 0, 0).listen();
  }

  private async listen(): Promise<this> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', resolve);
    });
    this.port = (this.server.address() as { port: number }).port;
    return this;
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }

  private accept(client: Socket): void {
    this.track(client);
    if (this.targetPort === undefined || this.silent) {
      client.on('data', () => undefined); // swallowed: nothing ever comes back
      return;
    }
    const upstream = connect(this.targetPort, '127.0.0.1');
    this.track(upstream);
    this.pipe(client, upstream);
    this.pipe(upstream, client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  /**
   * Forwards `from` to `to`, each chunk delayed: chunks wait in one queue per
   * direction, drained in order by one timer, so a chunk never overtakes the
   * one before it (separate timers could fire out of order).
   */
  private pipe(from: Socket, to: Socket): void {
    const queue: { due: number; chunk: Buffer }[] = [];
    let timer: NodeJS.Timeout | undefined;
    const drain = () => {
      if (timer) this.timers.delete(timer);
      timer = undefined;
      const now = performance.now();
      while (queue.length > 0 && queue[0]!.due <= now + 0.5) {
        const { chunk } = queue.shift()!;
        if (!to.destroyed && to.writable) to.write(chunk);
      }
      if (queue.length > 0) {
        timer = setTimeout(drain, Math.max(1, queue[0]!.due - now));
        this.timers.add(timer);
      }
    };
    from.on('data', (chunk: Buffer) => {
      const due = Math.max(queue.at(-1)?.due ?? 0, performance.now() + this.minMs + Math.random() * (this.maxMs - this.minMs));
      queue.push({ due, chunk });
      if (!timer) {
        timer = setTimeout(drain, Math.max(1, due - performance.now()));
        this.timers.add(timer);
      }
    });
  }

  /** Cuts every connection, and from now on accepts new ones without ever answering (see `blackhole`). */
  silence(): void {
    this.silent = true;
    for (const socket of this.sockets) socket.destroy();
  }

  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
