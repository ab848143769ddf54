import { randomBytes } from 'node:crypto';
import { Ops, type Entry } from './memory-data.js';
import { publish, type Receiver } from './memory-pubsub.js';

/** Settings of one in-memory node. */
export interface MemoryRedisNodeOptions {
  /**
   * The node's clock, ms since the epoch: key expiry, the script clock (Redis
   * `TIME`) and uptime follow it. Default `Date.now`, so fake timers that mock
   * `Date` move expiry too.
   */
  readonly now?: () => number;
  /** Delay before each reply, ms (0: the reply is a resolved promise). Default 0. */
  readonly latency?: number;
  /** Host part of the node's label (`<host>:<port>/0`). Default `'memory'`; ports are unique per process. */
  readonly host?: string;
}

/** A connection to a server, told when the server goes down and comes back. */
export interface Connection extends Receiver {
  serverDown(error: Error): void;
  serverUp(): void;
}

let nextPort = 1;

/** A Redis server kept in this process: keys with expiry, strings, sorted sets, hashes, pub/sub, the script cache. */
export class MemoryServer {
  readonly data = new Map<string, Entry>();
  /** SHAs loaded by EVAL (EVALSHA answers NOSCRIPT for the others, as Redis does). */
  readonly loaded = new Set<string>();
  readonly connections = new Set<Connection>();
  runId = randomBytes(20).toString('hex');
  startedAt: number;
  paused = false;
  down = false;
  private readonly queue: { run: () => void; fail: (error: Error) => void }[] = [];
  private commands = 0;

  readonly label: string;

  /** A new server, on a port unique in this process. */
  static create(options: MemoryRedisNodeOptions): MemoryServer {
    if (options.latency !== undefined && !(Number.isFinite(options.latency) && options.latency >= 0)) {
      throw new TypeError(`Expected \`latency\` to be a non-negative number of ms, got ${options.latency}`);
    }
    // `Date.now` read at each call, not kept: fake timers installed after the node was made move its clock too.
    return new MemoryServer(options.now ?? (() => Date.now()), options.latency ?? 0, options.host ?? 'memory', nextPort++);
  }

  private constructor(
    readonly now: () => number,
    readonly latency: number,
    readonly host: string,
    readonly port: number,
  ) {
    this.label = `${host}:${port}`;
    // A node stands for a server that has been up for a while: the restart
    // guard does not exclude it until `restart()` is called.
    this.startedAt = now() - 86_400_000;
  }

  /** Runs a command atomically when the server takes it, and answers after the latency. */
  submit<T>(command: (ops: Ops) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const run = () => {
        let reply: T;
        try {
          if (++this.commands % 1000 === 0) this.sweep();
          reply = command(new Ops(this, this.now()));
        } catch (error) {
          return this.answer(() => reject(error));
        }
        this.answer(() => resolve(reply));
      };
      if (this.down) return reject(this.downError());
      if (this.paused) this.queue.push({ run, fail: reject });
      else run();
    });
  }

  downError(): Error {
    return new Error(`Connection is closed: ${this.label} is down (simulated by MemoryRedisNode.down())`);
  }

  private answer(deliver: () => void): void {
    if (this.latency > 0) setTimeout(deliver, this.latency);
    else deliver();
  }

  resume(): void {
    this.paused = false;
    for (const { run } of this.queue.splice(0)) run();
  }

  takeDown(): void {
    if (this.down) return;
    this.down = true;
    // Commands waiting on a paused node die with its connections.
    for (const { fail } of this.queue.splice(0)) fail(this.downError());
    for (const connection of this.connections) connection.serverDown(this.downError());
  }

  bringUp(): void {
    if (!this.down) return;
    this.down = false;
    for (const connection of this.connections) connection.serverUp();
  }

  /** Down and up again with a new run id and uptime 0; keys and the script cache are lost unless `keepData`. */
  restart(keepData: boolean): void {
    this.takeDown();
    if (!keepData) this.data.clear();
    this.loaded.clear();
    this.runId = randomBytes(20).toString('hex');
    this.startedAt = this.now();
    this.bringUp();
  }

  publish(channel: string, message: string): number {
    return publish(this.connections, channel, message);
  }

  /** The `INFO` text for `section`: the server section (run id and uptime, which the restart guard reads), or nothing. */
  info(section?: string): string {
    if (section !== undefined && !['server', 'default', 'all', 'everything'].includes(section.toLowerCase())) return '';
    const uptime = Math.max(0, Math.floor((this.now() - this.startedAt) / 1000));
    return [
      '# Server',
      'redis_version:7.2.0',
      'redis_mode:standalone',
      'executable:nest-redlock/testing MemoryRedisNode',
      `run_id:${this.runId}`,
      `tcp_port:${this.port}`,
      `uptime_in_seconds:${uptime}`,
      `uptime_in_days:${Math.floor(uptime / 86_400)}`,
      '',
    ].join('\r\n');
  }

  /** Drops expired keys (Redis does this in the background too). */
  sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.data) if (entry.expireAt !== undefined && now > entry.expireAt) this.data.delete(key);
  }
}
