import { startFleet } from '../support/redis-fleet.js';
import { glideClient } from '../support/glide.js';
import { describeLockBehaviour } from '../testing/lock-behaviour.js';

// The shared lock behaviour, on three redis-server nodes each given as the application's own GLIDE client.
describeLockBehaviour('Valkey GLIDE GlideClient nodes', async () => {
  const fleet = await startFleet(3);
  const clients = await Promise.all(fleet.ports.map((port) => glideClient(port)));
  return {
    nodes: clients,
    deleteKey: async (i, key) => void (await clients[i]!.del([key])),
    flush: async () => void (await Promise.all(clients.map((c) => c.flushall()))),
    stop: async () => {
      clients.forEach((c) => c.close());
      await fleet.stop();
    },
  };
});
