import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on loopback that delays every chunk, in both directions, by a
 * random time in [minMs, maxMs] while keeping the byte order.
 */
export class LatencyProxy {
  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly sockets: Set<Socket>,
  ) {}

  static async start(targetPort: number, minMs: number, maxMs: number): Promise<LatencyProxy> {
    const sockets = new Set<Socket>();
    const server = createServer((client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      delayed(client, upstream, minMs, maxMs);
      delayed(upstream, client, minMs, maxMs);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new LatencyProxy(server, (server.address() as { port: number }).port, sockets);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Forwards `from` to `to`, each chunk no earlier than the one before it. */
function delayed(from: Socket, to: Socket, minMs: number, maxMs: number): void {
  let last = 0;
  from.on('data', (chunk) => {
    const due = Math.max(last, Date.now() + minMs + Math.random() * (maxMs - minMs));
    last = due;
    setTimeout(() => to.writable && to.write(chunk), due - Date.now());
  });
}
