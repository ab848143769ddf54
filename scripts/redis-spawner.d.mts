export declare const HOST = '127.0.0.1';
export declare const DEFAULT_SERVER_BINARY = 'redis-server';

export interface RedisNodeOptions {
  /**
   * Extra redis-server arguments, appended last (so they override defaults); a
   * function is given the `extraPorts` picked for this start.
   */
  args?: string[] | ((extraPorts: readonly number[]) => string[]);
  /**
   * Free ports to pick besides the node's own, for its other listeners (say
   * `--tls-port`): picked again with the port when the server could not bind
   * one (taken meanwhile, by another server or a client's ephemeral port).
   */
  extraPorts?: number;
  /** Adds `--appendonly yes --appendfsync always` so kill -9 loses nothing acknowledged. */
  persistence?: boolean;
  /** Server binary; default env REDLOCK_TEST_SERVER or `redis-server`. */
  binary?: string;
  /** Fixed port instead of a free one picked by us. */
  port?: number;
  /** Readiness timeout in ms (default 5000). */
  startTimeoutMs?: number;
  /**
   * Text of a config file, written to `<dir>/node.conf` at the first start and
   * given as the server's first argument (a Sentinel needs a file it can rewrite;
   * `args: ['--sentinel', ...]` then starts one).
   */
  config?: string;
}

export interface RestartOptions {
  /** Keep the data dir (AOF/RDB) across the restart. Default false: the dir is wiped. */
  keepData?: boolean;
}

/** Binary of the local nodes: env REDLOCK_TEST_SERVER (a name on PATH or a path), default `redis-server`. */
export declare function serverBinary(env?: NodeJS.ProcessEnv): string;
/** Every RedisNode started in this process and not yet stopped. */
export declare function liveNodes(): RedisNode[];
/** Synchronously SIGKILL every registered redis PID (the exit hook does this). */
export declare function killAllSync(): void;
/** True while the PID exists and is not a zombie. */
export declare function pidAlive(pid: number): boolean;
/** Ask the OS for a free TCP port on 127.0.0.1 (bind to 0, read, close). */
export declare function findFreePort(): Promise<number>;

/** One redis-server process on 127.0.0.1, tied to this process's lifetime. */
export declare class RedisNode {
  readonly host: '127.0.0.1';
  readonly options: Readonly<RedisNodeOptions>;
  constructor(options?: RedisNodeOptions);
  /** Throws before the first start() when no port was given. */
  get port(): number;
  get url(): string;
  /** The `extraPorts` of the last start (empty without them). */
  get extraPorts(): readonly number[];
  /** PID of redis-server; undefined when not running. */
  get pid(): number | undefined;
  get running(): boolean;
  get paused(): boolean;
  /** Directory holding `data/` (redis --dir) and `redis.log`. */
  get dir(): string | undefined;
  get dataDir(): string | undefined;
  get logFile(): string | undefined;
  /** The config file written from `config` (undefined without one). */
  get configFile(): string | undefined;
  /** Start the server. Picks a free port on first start; retries on EADDRINUSE. */
  start(): Promise<void>;
  /** SIGKILL the server (resuming it first if paused), wait for exit, remove its tmp dir. */
  stop(): Promise<void>;
  /** kill -9 the server and wait until it is gone. Data is lost unless `persistence`. */
  kill(): Promise<void>;
  /** SIGSTOP: the port still accepts connections (kernel backlog) but nothing is answered. */
  pause(): Promise<void>;
  /** SIGCONT a paused server. */
  resume(): Promise<void>;
  /** Kill (if running) and start again on the same port; the data dir is wiped unless keepData. */
  restart(opts?: RestartOptions): Promise<void>;
  /** Synchronous SIGKILL of the redis PID, only while it is our wrapper's child (for 'exit' hooks). Never throws. */
  killSync(): void;
  /** Redis log so far (for diagnostics). */
  readLog(): Promise<string>;
}

/** Starts one node; resolves once it answers. */
export declare function startNode(options?: RedisNodeOptions): Promise<RedisNode>;

export interface StartedNodes {
  readonly nodes: RedisNode[];
  readonly urls: string[];
  /** Stops every node; never rejects. */
  stop(): Promise<void>;
}

/** Starts `count` nodes in parallel; if one fails, the others are stopped and the error rethrown. */
export declare function startNodes(count: number, options?: RedisNodeOptions): Promise<StartedNodes>;
