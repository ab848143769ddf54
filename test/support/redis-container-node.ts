/**
 * Optional container-backed node (testcontainers), same surface as RedisNode.
 *
 * Only used when a container engine is reachable and either
 * REDLOCK_TEST_CONTAINERS=1 or no local `redis-server` is on PATH (see
 * redis-fleet.ts). testcontainers is loaded lazily so the local path never
 * pays its ~0.5 s import.
 *
 * NOTE: this path has been type-checked but not exercised on the machine the
 * harness was written on (no container engine there). The local-binary path
 * (RedisNode) is the one CI and the fault tests rely on.
 *
 * Mapping of operations:
 *   kill    -> docker kill (SIGKILL); the container is kept so restart({keepData:true}) can reuse it
 *   pause   -> docker pause (cgroup freezer: like SIGSTOP, connections hang)
 *   resume  -> docker unpause
 *   restart -> keepData: docker start of the same container; else a fresh container
 *   stop    -> unpause if needed, stop + remove
 * The host port is bound explicitly (picked free locally on first start), so
 * it survives restarts; this assumes the engine runs on this host.
 */
import type { StartedTestContainer } from 'testcontainers';
import { findFreePort, type RestartOptions, type TestRedisNode } from './redis-node.js';
import { rawCommand } from './resp.js';

export interface ContainerNodeOptions {
  /** Image, default env REDLOCK_TEST_IMAGE or `redis:7`. */
  image?: string;
  args?: string[];
  persistence?: boolean;
  startTimeoutMs?: number;
}

const REDIS_PORT = 6379;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class ContainerRedisNode implements TestRedisNode {
  private container: StartedTestContainer | undefined;
  private _host = '127.0.0.1';
  private _port: number | undefined;
  private _running = false;
  private _paused = false;

  constructor(private readonly options: ContainerNodeOptions = {}) {}

  get host(): string {
    return this._host;
  }
  get port(): number {
    if (this._port === undefined) throw new Error('ContainerRedisNode has no port yet: call start() first');
    return this._port;
  }
  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }
  /** Not meaningful for a container (the process lives in another PID namespace). */
  get pid(): number | undefined {
    return undefined;
  }
  get running(): boolean {
    return this._running;
  }
  get paused(): boolean {
    return this._paused;
  }

  /** No ports besides the mapped one (`extraPorts` needs the local backend). */
  get extraPorts(): readonly number[] {
    return [];
  }

  async start(): Promise<void> {
    if (this._running) throw new Error('ContainerRedisNode already running');
    const tc = await import('testcontainers');
    this._port ??= await findFreePort();
    const cmd = ['redis-server', '--save', '', '--appendonly', 'no', '--protected-mode', 'no'];
    if (this.options.persistence) cmd.push('--appendonly', 'yes', '--appendfsync', 'always');
    if (this.options.args) cmd.push(...this.options.args);
    this.container = await new tc.GenericContainer(this.options.image ?? process.env.REDLOCK_TEST_IMAGE ?? 'redis:7')
      .withExposedPorts({ container: REDIS_PORT, host: this._port })
      .withCommand(cmd)
      .start();
    this._host = this.container.getHost();
    this._running = true;
    this._paused = false;
    await this.waitReady();
  }

  async stop(): Promise<void> {
    const c = this.container;
    this.container = undefined;
    if (!c) return;
    if (this._paused) await (await this.docker(c)).unpause().catch(() => undefined);
    await c.stop({ timeout: 0, remove: true }).catch(() => undefined);
    this._running = false;
    this._paused = false;
  }

  async kill(): Promise<void> {
    const c = this.requireContainer('kill');
    const d = await this.docker(c);
    if (this._paused) await d.unpause().catch(() => undefined);
    await d.kill().catch(() => undefined);
    await d.wait().catch(() => undefined);
    this._running = false;
    this._paused = false;
  }

  async pause(): Promise<void> {
    await (await this.docker(this.requireContainer('pause'))).pause();
    this._paused = true;
  }

  async resume(): Promise<void> {
    await (await this.docker(this.requireContainer('resume'))).unpause();
    this._paused = false;
  }

  async restart(opts: RestartOptions = {}): Promise<void> {
    if (this._running && this.container) await this.kill();
    if (opts.keepData && this.container) {
      await (await this.docker(this.container)).start();
      this._running = true;
      await this.waitReady();
      return;
    }
    await this.stop();
    await this.start();
  }

  private requireContainer(op: string): StartedTestContainer {
    if (!this.container || !this._running) throw new Error(`cannot ${op}: container node is not running`);
    return this.container;
  }

  private async docker(c: StartedTestContainer) {
    const tc = await import('testcontainers');
    return (await tc.getContainerRuntimeClient()).container.getById(c.getId());
  }

  private async waitReady(): Promise<void> {
    const timeoutMs = this.options.startTimeoutMs ?? 15000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        if ((await rawCommand(this.port, ['PING'], { host: this.host, timeoutMs: 250 })) === 'PONG') return;
      } catch {
        /* not yet */
      }
      if (Date.now() > deadline) throw new Error(`container redis at ${this.url} gave no +PONG within ${timeoutMs} ms`);
      await sleep(10);
    }
  }
}
