// One adapter per library: create(urls, { wait }) -> { ready, acquire(key, ttl), release(handle), close }.
// `wait: true` configures the library to keep retrying (its own delays) while a resource is busy.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

const clientsFor = (urls) =>
  urls.map((url) => {
    const client = new Redis(url, { maxRetriesPerRequest: 1 });
    client.on('error', () => undefined); // a node down is part of the scenario
    return client;
  });
const closeAll = (clients) => Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));

/** node-redlock v5's API: `acquire([key], ttl)`, `lock.release()`; retryCount -1 waits forever. */
function redlockV5Api(Redlock, urls, { wait }) {
  const clients = clientsFor(urls);
  const redlock = new Redlock(clients, wait ? { retryCount: -1 } : { retryCount: 0 });
  redlock.on('error', () => undefined);
  return {
    ready: async () => undefined,
    acquire: (key, ttl) => redlock.acquire([key], ttl),
    release: (lock) => lock.release(),
    close: () => closeAll(clients),
  };
}

export const adapters = {
  async 'nest-redlock'(urls, { wait }) {
    const { Redlock } = await import('../../dist/esm/index.js');
    const redlock = new Redlock({ nodes: urls, retryCount: wait ? 1_000_000 : 0 });
    return {
      ready: () => redlock.ready(),
      acquire: (key, ttl) => redlock.acquire(key, ttl),
      release: (lock) => lock.release(),
      close: () => redlock.close(),
    };
  },

  /** The floor: SET NX PX to every node, decided at quorum; compare-and-delete Lua release. */
  async raw(urls, { wait }) {
    const clients = clientsFor(urls);
    const quorum = Math.floor(urls.length / 2) + 1;
    const release = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
    let shas;
    const atQuorum = (replies) =>
      new Promise((resolve) => {
        let yes = 0;
        let no = 0;
        for (const r of replies) {
          r.then(
            (ok) => (ok === 'OK' ? ++yes === quorum && resolve(true) : ++no > urls.length - quorum && resolve(false)),
            () => ++no > urls.length - quorum && resolve(false),
          );
        }
      });
    return {
      ready: async () => (shas = await Promise.all(clients.map((c) => c.script('LOAD', release)))),
      async acquire(key, ttl) {
        for (;;) {
          const value = randomBytes(20).toString('base64url');
          if (await atQuorum(clients.map((c) => c.set(key, value, 'PX', ttl, 'NX')))) return { key, value };
          await Promise.all(clients.map((c, i) => c.evalsha(shas[i], 1, key, value).catch(() => 0)));
          if (!wait) throw new Error('busy');
          await new Promise((r) => setTimeout(r, 50 + Math.random() * 50));
        }
      },
      release: ({ key, value }) => Promise.all(clients.map((c, i) => c.evalsha(shas[i], 1, key, value).catch(() => 0))),
      close: () => closeAll(clients),
    };
  },

  async 'node-redlock v5'(urls, options) {
    return redlockV5Api((await import('redlock5')).default, urls, options);
  },

  async 'node-redlock v4'(urls, { wait }) {
    const { default: Redlock } = await import('redlock4');
    const clients = clientsFor(urls);
    const redlock = new Redlock(clients, wait ? { retryCount: -1 } : { retryCount: 0 });
    redlock.on('clientError', () => undefined);
    return {
      ready: async () => undefined,
      acquire: (key, ttl) => redlock.lock(key, ttl),
      release: (lock) => lock.unlock(),
      close: () => closeAll(clients),
    };
  },

  /** A maintained fork of node-redlock v5, with the same API. */
  async '@sesamecare-oss/redlock'(urls, options) {
    return redlockV5Api((await import('@sesamecare-oss/redlock')).Redlock, urls, options);
  },

  async 'redis-semaphore RedlockMutex'(urls, { wait }) {
    const { RedlockMutex } = await import('redis-semaphore');
    const clients = clientsFor(urls);
    return {
      ready: async () => undefined,
      async acquire(key, ttl) {
        const mutex = new RedlockMutex(clients, key, {
          lockTimeout: ttl,
          refreshInterval: 0,
          acquireTimeout: wait ? 60_000 : 5000,
          acquireAttemptsLimit: wait ? Infinity : 1,
        });
        await mutex.acquire();
        return mutex;
      },
      release: (mutex) => mutex.release(),
      close: () => closeAll(clients),
    };
  },
};
