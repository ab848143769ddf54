import type * as Ioredis from 'ioredis';

/**
 * The library's own ioredis, loaded on first call: only a node given as a URL
 * or an options object needs it. An application that passes its own clients
 * (node-redis, GLIDE, or another copy of ioredis) never loads it: importing
 * the core took 75-90 ms and 4.3 MB of heap without it, 185-195 ms and 5.8 MB
 * with it (Node 20, this machine).
 *
 * A CommonJS file of its own so that the ES module build loads it
 * synchronously (connections are made in the client's constructor), and so
 * that bundlers see a static `require('ioredis')` in both builds.
 */
function requireIoredis(): typeof Ioredis {
  // The point of this file: a require() made when called, not an import made when loaded.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('ioredis') as typeof Ioredis;
}

export = requireIoredis;
