/** A GLIDE command with its options (decoder, route). */
export type GlideSend = (args: string[], options: object) => Promise<unknown>;

/** A primary of a cluster, as GLIDE's `routeByAddress` names it. */
export interface GlidePrimary {
  readonly host: string;
  readonly port: number;
}

/**
 * The primaries of a cluster reached through GLIDE, which gives no handle per
 * shard: CLUSTER SLOTS, asked of the seed addresses in turn (each bounded by
 * the client's request timeout) and then of any node. A random node alone could
 * be the one that hangs, and the answer would then depend on the draw.
 */
export async function clusterPrimaries(send: GlideSend, asStrings: object, seeds: readonly GlidePrimary[]): Promise<GlidePrimary[]> {
  for (const seed of seeds) {
    const reply = await send(['CLUSTER', 'SLOTS'], { ...asStrings, route: { type: 'routeByAddress', ...seed } }).catch(() => undefined);
    if (reply !== undefined) return primariesOf(reply);
  }
  return primariesOf(await send(['CLUSTER', 'SLOTS'], { ...asStrings, route: 'randomNode' }));
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
