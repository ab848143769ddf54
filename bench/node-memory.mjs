// What the lock nodes hold: keys (DBSIZE) and memory (INFO memory's used_memory), per node.
// Read over a short-lived connection of its own, so that the clients measured are not touched.

/** `{ keys, bytes }` of each node at `urls`, in order; `undefined` for a node that does not answer. */
export async function nodeMemory(urls) {
  const { Redis } = await import('ioredis');
  return Promise.all(
    urls.map(async (url) => {
      const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
      client.on('error', () => undefined);
      try {
        await client.connect();
        const [keys, info] = await Promise.all([client.dbsize(), client.info('memory')]);
        return { keys, bytes: Number(/^used_memory:(\d+)/m.exec(info)?.[1]) };
      } catch {
        return undefined;
      } finally {
        client.disconnect();
      }
    }),
  );
}

/** Per node, `after` minus `before` (both from `nodeMemory`), and the mean over the nodes that answered both times. */
export function nodeGrowth(before, after) {
  const perNode = after.map((a, i) => (a && before[i] ? { keys: a.keys - before[i].keys, bytes: a.bytes - before[i].bytes } : undefined));
  const answered = perNode.filter(Boolean);
  const mean = (f) => (answered.length ? answered.reduce((s, x) => s + f(x), 0) / answered.length : undefined);
  return { perNode, keys: mean((x) => x.keys), bytes: mean((x) => x.bytes) };
}
