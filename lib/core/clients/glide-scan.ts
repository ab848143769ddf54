import type { ScanStep } from '../connection.js';
import { clusterPrimaries, type GlidePrimary, type GlideSend } from './glide-primaries.js';

const scanArgs = (cursor: string, match: string, count: number) => ['SCAN', cursor, 'MATCH', match, 'COUNT', String(count)];

const decode = (reply: unknown) => {
  const [cursor, keys] = reply as [unknown, unknown[]];
  return [String(cursor), keys.map(String)] as const;
};

/**
 * SCAN for the operators' listing over a GLIDE client. A standalone client
 * has one server. A cluster client has one step that walks every primary in
 * turn, each addressed by route, with the primary's index in the cursor
 * (`<index>:<cursor>`): GLIDE gives no handle per shard, and the primaries are
 * known only once CLUSTER SLOTS answered.
 */
export function glideScanners(send: GlideSend, isCluster: boolean, asStrings: object, seeds: readonly GlidePrimary[]): readonly ScanStep[] {
  if (!isCluster) return [(cursor, match, count) => send(scanArgs(cursor, match, count), asStrings).then(decode)];
  let primaries: Promise<GlidePrimary[]> | undefined;
  const step: ScanStep = async (cursor, match, count) => {
    primaries ??= clusterPrimaries(send, asStrings, seeds);
    const shards = await primaries;
    const [index, shardCursor] = cursor === '0' ? [0, '0'] : (cursor.split(':') as [string, string]);
    const i = Number(index);
    const shard = shards[i];
    if (!shard) return ['0', []] as const;
    const [next, keys] = decode(
      await send(scanArgs(shardCursor, match, count), { ...asStrings, route: { type: 'routeByAddress', ...shard } }),
    );
    if (next !== '0') return [`${i}:${next}`, keys] as const;
    return [i + 1 < shards.length ? `${i + 1}:0` : '0', keys] as const;
  };
  return [step];
}
