/**
 * A local Sentinel deployment, for Sentinel-managed lock nodes: per group a
 * master and its replicas, and Sentinel processes (`redis-server --sentinel`,
 * the binary of REDLOCK_TEST_SERVER) watching every group. Every process is a
 * RedisNode of the shared spawner: free loopback ports, stopped by PID.
 */
import { RedisNode } from './redis-node.js';
import { checkedCommand, type RespValue } from './resp.js';
import { until } from './until.js';

export interface SentinelGroupSpec {
  /** The group's name (the master name of `sentinel monitor`, ioredis's `name`). */
  readonly name: string;
  /** Replicas of its master (default 0). */
  readonly replicas?: number;
}

const HOST = '127.0.0.1';

/** Sentinels that must agree that a master is down (SENTINEL FAILOVER needs no agreement). */
const QUORUM = 2;

/** `[k1, v1, k2, v2, ...]` (a SENTINEL reply's entry) as an object. */
function fields(entry: RespValue): Record<string, string> {
  const list = Array.isArray(entry) ? entry.map(String) : [];
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i]!] = list[i + 1]!;
  return out;
}

async function replication(port: number): Promise<string> {
  return String(await checkedCommand(port, ['INFO', 'replication']));
}

export class SentinelDeployment {
  private constructor(
    /** Each group's data servers, its first master first. */
    private readonly groups: ReadonlyMap<string, readonly RedisNode[]>,
    readonly sentinels: readonly RedisNode[],
  ) {}

  /** The sentinels' addresses, as ioredis's `sentinels` option takes them. */
  get addresses(): { host: string; port: number }[] {
    return this.sentinels.map((s) => ({ host: HOST, port: s.port }));
  }

  /** A group's data servers (master and replicas, whatever their roles now). */
  servers(name: string): readonly RedisNode[] {
    const servers = this.groups.get(name);
    if (!servers) throw new Error(`no Sentinel group ${name}`);
    return servers;
  }

  /** The port of the group's master, as sentinel `i` names it. */
  async masterPort(name: string, i = 0): Promise<number> {
    const reply = await checkedCommand(this.sentinels[i]!.port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name]);
    return Number((reply as string[])[1]);
  }

  /** The group's server that is a master now, per the servers themselves. */
  async master(name: string): Promise<RedisNode> {
    for (const server of this.servers(name)) if ((await replication(server.port)).includes('role:master')) return server;
    throw new Error(`no master in Sentinel group ${name}`);
  }

  /**
   * A crash and its failover: kills the group's master (by PID), forces a
   * failover at once (SENTINEL FAILOVER: no down-after wait, no agreement), and
   * waits until every sentinel names the new master and it says it is one.
   * Returns the new master. (A failover of a live master leaves it a master,
   * taking writes, until a sentinel converts it some 10 s later.)
   */
  async failover(name: string, timeout = 20_000): Promise<RedisNode> {
    const old = await this.masterPort(name);
    await this.servers(name)
      .find((s) => s.port === old)!
      .kill();
    await checkedCommand(this.sentinels[0]!.port, ['SENTINEL', 'FAILOVER', name]);
    let now = old;
    await until(
      async () => {
        const ports = await Promise.all(this.sentinels.map((_, i) => this.masterPort(name, i)));
        now = ports[0]!;
        return ports.every((p) => p === now && p !== old) && (await replication(now)).includes('role:master');
      },
      `every sentinel naming a new master of ${name}`,
      timeout,
      50,
    );
    return this.servers(name).find((s) => s.port === now)!;
  }

  /**
   * Starts the groups' servers (replicas once their master is up), waits for
   * every replica's link, then `sentinels` Sentinels watching every group, and
   * waits until each of them sees every replica (a failover needs one).
   */
  static async start(groups: readonly SentinelGroupSpec[], sentinels = 3): Promise<SentinelDeployment> {
    // A master waits 5 s (repl-diskless-sync-delay) for more replicas before it syncs the first.
    const masters = groups.map(() => new RedisNode({ args: ['--repl-diskless-sync-delay', '0'] }));
    const started: RedisNode[] = [...masters];
    const members = new Map<string, RedisNode[]>();
    const watchers: RedisNode[] = [];
    const deployment = new SentinelDeployment(members, watchers);
    try {
      await Promise.all(masters.map((m) => m.start()));
      const replicas = groups.map(({ name, replicas = 0 }, g) => {
        const own = Array.from({ length: replicas }, () => new RedisNode({ args: ['--replicaof', HOST, String(masters[g]!.port)] }));
        members.set(name, [masters[g]!, ...own]);
        return own;
      });
      started.push(...replicas.flat());
      await Promise.all(replicas.flat().map((r) => r.start()));
      await until(
        async () => (await Promise.all(replicas.flat().map((r) => replication(r.port)))).every((i) => i.includes('master_link_status:up')),
        'every replica linked to its master',
        10_000,
        20,
      );
      const monitor = groups.flatMap(({ name }, g) => [
        ...['--sentinel', 'monitor', name, HOST, String(masters[g]!.port), String(QUORUM)],
        ...['--sentinel', 'down-after-milliseconds', name, '1000'],
        ...['--sentinel', 'failover-timeout', name, '10000'],
      ]);
      watchers.push(...Array.from({ length: sentinels }, () => new RedisNode({ config: '', args: ['--sentinel', ...monitor] })));
      started.push(...watchers);
      await Promise.all(watchers.map((s) => s.start()));
      await until(
        async () => {
          for (const s of watchers) {
            for (const { name, replicas = 0 } of groups) {
              const seen = (await checkedCommand(s.port, ['SENTINEL', 'REPLICAS', name])) as RespValue[];
              if (seen.map(fields).filter((r) => r.flags === 'slave' && r['master-link-status'] === 'ok').length < replicas) return false;
            }
          }
          return true;
        },
        'every sentinel seeing every replica',
        15_000,
        50,
      );
      return deployment;
    } catch (error) {
      await Promise.allSettled(started.map((n) => n.stop()));
      throw error;
    }
  }

  /** Stops the sentinels, then the servers. Never rejects. */
  async stop(): Promise<void> {
    await Promise.allSettled(this.sentinels.map((s) => s.stop()));
    await Promise.allSettled([...this.groups.values()].flat().map((n) => n.stop()));
  }
}
