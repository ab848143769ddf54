import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { RedisNode } from './redis-node.js';
import { checkedCommand } from './resp.js';
import { until } from './until.js';

const run = promisify(execFile);

/** A local Redis Cluster of `masters` redis-server processes (no replicas), for one lock node. */
export class RedisClusterFleet {
  private constructor(readonly nodes: RedisNode[]) {}

  /** Startup nodes for ioredis `Cluster`. */
  get seeds(): { host: string; port: number }[] {
    return this.nodes.map((n) => ({ host: n.host, port: n.port }));
  }

  static async start(masters = 3): Promise<RedisClusterFleet> {
    const nodes = Array.from({ length: masters }, () => new RedisNode({ args: ['--cluster-enabled', 'yes'] }));
    const fleet = new RedisClusterFleet(nodes);
    try {
      await Promise.all(nodes.map((n) => n.start()));
      const cli = process.env.REDLOCK_TEST_CLI ?? 'redis-cli';
      await run(cli, ['--cluster', 'create', ...nodes.map((n) => `${n.host}:${n.port}`), '--cluster-replicas', '0', '--cluster-yes']);
      await until(
        async () =>
          (await Promise.all(nodes.map((n) => checkedCommand(n.port, ['CLUSTER', 'INFO'])))).every((info) =>
            String(info).includes('cluster_state:ok'),
          ),
        'cluster_state:ok on every shard',
        10_000,
        50,
      );
      return fleet;
    } catch (error) {
      await fleet.stop();
      throw error;
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop().catch(() => undefined)));
  }
}
