import type { LockListing } from '../core/index.js';
import { holderLines, holderName, permitsHead } from './holders.js';
import type { CommandRun } from './main.js';

/** `nest-redlock list [pattern]`: one line per lock. */
export async function listCommand({ args, values, redlock, print }: CommandRun): Promise<number> {
  const limit = values.limit === undefined ? undefined : Number(values.limit);
  const listing = await redlock.list(args[0] ?? '*', { limit });
  print(values.json ? JSON.stringify(listing, null, 2) : renderListing(listing));
  return 0;
}

function renderListing(listing: LockListing): string {
  const rows = listing.locks.flatMap((l) =>
    l.kind === 'semaphore' || l.kind === 'rw'
      ? [`${permitsHead(l)}, token ${l.fencingCounter ?? '-'}, ${l.waiters} waiting`, ...holderLines(l)]
      : [
          `${JSON.stringify(l.resource)} ${l.held ? 'HELD' : 'partial'}${holderName(l)} (holder ${l.holder}) on ${l.heldOn}/${l.nodes.length} nodes, ` +
            `${l.ttl} ms left, token ${l.fencingCounter ?? '-'}, ${l.waiters} waiting`,
        ],
  );
  const scanned = `${listing.locks.length} resource(s); ${listing.scanned} nodes scanned (quorum ${listing.quorum})`;
  return [...rows, listing.truncated ? `${scanned}; truncated: more may match (raise --limit or narrow the pattern)` : scanned].join('\n');
}
