import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { InvalidArgumentError, MAX_TTL, Redlock } from '../../lib/index.js';

// Nothing here reaches a server: every bad input is refused before a command is sent.
const nodes = ['redis://127.0.0.1:1/0', 'redis://127.0.0.1:2/0', 'redis://127.0.0.1:3/0'];
const redlock = new Redlock({ nodes });
afterAll(() => redlock.close());

function expectInvalid(fn: () => unknown, argument: string) {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).code).toBe('INVALID_ARGUMENT');
    expect((error as InvalidArgumentError).argument).toBe(argument);
    return;
  }
  throw new Error(`expected an InvalidArgumentError for ${argument}`);
}

async function expectRejectsInvalid(promise: Promise<unknown>, argument: string) {
  const error = await promise.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(InvalidArgumentError);
  expect((error as InvalidArgumentError).argument).toBe(argument);
}

describe('node list', () => {
  it('rejects an empty list', () => expectInvalid(() => new Redlock({ nodes: [] }), 'nodes'));
  it('rejects a missing list', () => expectInvalid(() => new Redlock({} as never), 'nodes'));
  it('rejects two entries for the same server and db', () => {
    expectInvalid(() => new Redlock({ nodes: ['redis://localhost:7001', 'redis://127.0.0.1:7001/0'] }), 'nodes[1]');
    expectInvalid(() => new Redlock({ nodes: [{ port: 7001 }, 'redis://127.0.0.1:7001'] }), 'nodes[1]');
  });
  it.each(['LOCALHOST', 'localhost.', '127.1', '127.0.0.2', '[::ffff:127.0.0.1]', '[::1]'])(
    'takes %s for the same server as 127.0.0.1 (issue 18.12)',
    (host) => expectInvalid(() => new Redlock({ nodes: ['redis://127.0.0.1:7001', `redis://${host}:7001`] }), 'nodes[1]'),
  );
  it.each([
    ['an empty string (an unset variable split on commas)', ''],
    ['a host without a scheme', 'localhost:6379'],
    ['a URL of another scheme, password hidden', 'http://user:s3cret@127.0.0.1:7001'],
  ])('rejects %s as nodes[0], naming the option (issue 18.21)', (_label, url) => {
    const error = (() => {
      try {
        new Redlock({ nodes: [url] });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).argument).toBe('nodes[0]');
    expect(String((error as Error).message)).not.toContain('s3cret');
  });
  it('accepts the same server with different dbs', async () => {
    const ok = new Redlock({ nodes: ['redis://127.0.0.1:7001/1', 'redis://127.0.0.1:7001/2'] });
    expect(ok.quorum).toBe(2);
    await ok.close();
  });
  it('rejects a URL whose path is not a database number (ioredis took /abc for database NaN)', async () => {
    expectInvalid(() => new Redlock({ nodes: ['redis://user:pw@127.0.0.1:7001/abc'] }), 'nodes[0]');
    expectInvalid(() => new Redlock({ nodes: ['redis://127.0.0.1:7001', 'rediss://127.0.0.1:7002/1/2'] }), 'nodes[1]');
    const ok = new Redlock({ nodes: ['redis://127.0.0.1:7001/', 'redis://127.0.0.1:7002/3', 'redis://127.0.0.1:7003?family=4'] });
    await ok.close();
  });
  it('says a unix socket written as a URL is given by its path', () => {
    for (const spec of ['redis:///tmp/redis.sock', 'unix:///tmp/redis.sock', 'unix:/tmp/redis.sock', 'redis://:s3cret@/tmp/redis.sock']) {
      expect(() => new Redlock({ nodes: [spec] })).not.toThrow(/s3cret/);
      expect(() => new Redlock({ nodes: [spec] })).toThrow(
        expect.objectContaining({
          argument: 'nodes[0]',
          message: expect.stringMatching(/unix socket given by its path alone \('\/tmp\/redis.sock'\)/),
        }),
      );
    }
  });
  it('rejects a client passed twice', () => {
    const client = new Redis({ lazyConnect: true, port: 7009 });
    expectInvalid(() => new Redlock({ nodes: [client, client] }), 'nodes[1]');
    client.disconnect();
  });
  it('rejects an entry of the wrong type', () => expectInvalid(() => new Redlock({ nodes: [42 as never] }), 'nodes[0]'));
  it('never puts a password in the message', () => {
    try {
      new Redlock({ nodes: ['redis://:s3cret@127.0.0.1:7001', 'redis://:s3cret@127.0.0.1:7001'] });
    } catch (error) {
      expect(String((error as Error).message)).not.toContain('s3cret');
      return;
    }
    throw new Error('expected a duplicate-node error');
  });
  it('never puts a password in the message of a URL it refuses, however it is spelt', () => {
    // What splitting an environment variable gives: a space or quotes around a URL; a whole
    // URL list given as one node, or as `nodes`; a password with an unencoded '@'; a long user.
    const refused: unknown[] = [
      [' redis://locker:s3cret@10.0.0.2:6379', 'redis://10.0.0.3:6379', 'redis://10.0.0.4:6379'],
      ['\tredis://locker:s3cret@10.0.0.2:6379'],
      ['"redis://locker:s3cret@10.0.0.2:6379"'],
      ['redis://locker:s3c@ret2@10.0.0.2:6379 redis://10.0.0.3:6379'],
      [`redis://${'u'.repeat(70)}:s3cret@10.0.0.2:6379 `],
      'redis://default:s3cret@redis.internal:6379',
    ];
    for (const nodes of refused) {
      let message = '';
      try {
        new Redlock({ nodes: nodes as string[] });
      } catch (error) {
        expect(error).toBeInstanceOf(InvalidArgumentError);
        message = String((error as Error).message);
      }
      expect(message).toMatch(/Expected `nodes/);
      expect(message).not.toMatch(/s3c|ret2/);
    }
  });
  it('computes the quorum as floor(N/2)+1', async () => {
    for (const [n, q] of [
      [1, 1],
      [2, 2],
      [3, 2],
      [4, 3],
      [5, 3],
      [7, 4],
    ] as const) {
      const r = new Redlock({ nodes: Array.from({ length: n }, (_, i) => `redis://127.0.0.1:${7100 + i}`) });
      expect(r.quorum).toBe(q);
      await r.close();
    }
  });
});

describe('options', () => {
  const cases: [string, object][] = [
    ['driftFactor', { driftFactor: 1 }],
    ['driftFactor', { driftFactor: -0.1 }],
    ['driftFactor', { driftFactor: Number.NaN }],
    ['retryCount', { retryCount: -1 }],
    ['retryCount', { retryCount: 1.5 }],
    ['retryDelay', { retryDelay: -5 }],
    ['retryJitter', { retryJitter: 'x' }],
    ['acquireTimeout', { acquireTimeout: 0 }],
    ['nodeTimeout', { nodeTimeout: -1 }],
    ['ttl', { ttl: 0 }],
    ['prefix', { prefix: 5 }],
    ['fencing', { fencing: 'yes' }],
    ['autoExtend.threshold', { autoExtend: { threshold: 1 } }],
    ['onEvent', { onEvent: 'log' }],
  ];
  it.each(cases)('rejects a bad %s', (argument, options) => {
    expectInvalid(() => new Redlock({ nodes, ...options } as never), argument);
  });
  it('says what was expected and what arrived', () => {
    expect(() => new Redlock({ nodes, driftFactor: 2 })).toThrow('Expected `driftFactor` to be a number in [0, 1), got 2 (number)');
  });
});

describe('misspelt option names (issue 18.13)', () => {
  it('are refused by the client, naming them', () => {
    expectInvalid(() => new Redlock({ nodes: ['redis://127.0.0.1:7001'], retryCont: 3 } as never), 'options.retryCont');
    expectInvalid(() => new Redlock({ nodes: ['redis://127.0.0.1:7001'], autoExtend: { treshold: 0.3 } } as never), 'autoExtend.treshold');
    expectInvalid(() => new Redlock({ nodes: ['redis://127.0.0.1:7001'], autoExtend: 'yes' } as never), 'autoExtend');
  });
  it('are refused per call', () =>
    expectRejectsInvalid(redlock.acquire('r', 1000, { retrycount: 1 } as never), 'acquire options.retrycount'));
});

describe('acquire arguments', () => {
  it.each([
    [0, 'ttl'],
    [-5, 'ttl'],
    [1.5, 'ttl'],
    [MAX_TTL + 1, 'ttl'],
    [Number.NaN, 'ttl'],
    [1, 'ttl'], // no validity is left after the drift allowance (issue 18.13)
    [2, 'ttl'],
  ])('rejects ttl %p', (ttl, argument) => expectRejectsInvalid(redlock.acquire('r', ttl), argument));

  it.each([
    ['', 'resource'],
    [[], 'resources'],
    [[''], 'resources[0]'],
    [['a', 'a'], 'resources[1]'],
    [['a', 7], 'resources[1]'],
    [null, 'resources'],
    ['x'.repeat(1025), 'resource'],
    [Array.from({ length: 300_000 }, (_, i) => `r${i}`), 'resources'], // issue 18.7
  ])('rejects resources %#', (resources, argument) => expectRejectsInvalid(redlock.acquire(resources as never, 1000), argument));

  it('rejects bad retry settings per call', async () => {
    await expectRejectsInvalid(redlock.acquire('r', 1000, { retryCount: -1 }), 'retryCount');
    await expectRejectsInvalid(redlock.acquire('r', 1000, { nodeTimeout: 0 }), 'nodeTimeout');
  });

  it('accepts names with newlines, braces and binary-looking characters', async () => {
    // Validation passes; the nodes are unreachable, so the call fails on the quorum instead.
    const error = await redlock.acquire(['a\nb', '{tag}x', '\u0000\uffff'], 1000, { retryCount: 0 }).catch((e) => e);
    expect((error as { code: string }).code).toBe('QUORUM_UNREACHABLE');
  });

  it('rejects a routine that is not a function', () => expectRejectsInvalid(redlock.using('r', 1000, 5 as never), 'routine'));
});
