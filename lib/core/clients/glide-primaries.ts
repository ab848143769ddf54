/** A GLIDE command with its options (decoder, route). */
export type GlideSend = (args: string[], options: object) => Promise<unknown>;

/** A primary of a cluster, as GLIDE's `routeByAddress` names it. */
export interface GlidePrimary {
  readonly host: string;
  readonly port: number;
}

/**
 * The primaries of a cluster reached through GLIDE, which gives no handle per
 * shard: CLUSTER SLOTS, asked of every seed address and of any node at once,
 * the first answer taken. A random node alone could be the one that hangs, and
 * the answer would then depend on the draw; the seeds asked in turn took a
 * request timeout each when the cluster's servers were all gone (GLIDE waits
 * for an address it cannot reach), where it fails at once for any node.
 */
export async function clusterPrimaries(send: GlideSend, asStrings: object, seeds: readonly GlidePrimary[]): Promise<GlidePrimary[]> {
  const ask = (route: unknown) => send(['CLUSTER', 'SLOTS'], { ...asStrings, route });
  const any = ask('randomNode');
  try {
    return primariesOf(await Promise.any([...seeds.map((seed) => ask({ type: 'routeByAddress', ...seed })), any]));
  } catch {
    // Every one failed: any node's error says why (GLIDE's "Connection in recovery", say).
    return primariesOf(await any);
  }
}

/** The distinct primaries of a CLUSTER SLOTS reply (`[start, end, [host, port, id], ...replicas]` per range). */
function primariesOf(reply: unknown): GlidePrimary[] {
  const seen = new Map<string, GlidePrimary>();
  for (const range of reply as unknown[][]) {
    const [host, port] = range[2] as [unknown, unknown];
    seen.set(`${String(host)}:${Number(port)}`, { host: String(host), port: Number(port) });
  }
  return [...seen.values()];
}
