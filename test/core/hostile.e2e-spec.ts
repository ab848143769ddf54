import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { QUICK_CLOSE } from '../support/other-ioredis.js';
import { ConsoleLogger } from '@nestjs/common';
import { inspect } from 'node:util';
import { LockService, Redlock, type LockEvent, type NodeReport, type QuorumUnreachableError } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { onEveryNode } from '../support/node-stats.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleet: RedisFleet;
let secured: RedisFleet;
let raw: Redis[];

beforeAll(async () => {
  [fleet, secured] = await Promise.all([startFleet(3), startFleet(3, { args: ['--requirepass', 'pa55-word-x'] })]);
  raw = fleet.urls.map((u) => new Redis(u));
});

afterAll(async () => {
  raw?.forEach((r) => r.disconnect());
  await Promise.all([fleet?.stop(), secured?.stop()]);
});

describe('hostile resource names', () => {
  it.each([
    ['a newline', 'line\nbreak'],
    ['a NUL and high code points', 'nul\u0000\u00ff\uffff'],
    ['hash-tag braces', '{user:1}:cart'],
    ['glob characters', '*?[]'],
    ['1024 characters', 'x'.repeat(1024)],
  ])('locks a name with %s exactly as given', async (_label, name) => {
    const redlock = new Redlock({ nodes: fleet.urls, retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT });
    try {
      const lock = await redlock.acquire(name, 5000);
      await until(() => onEveryNode(raw, `redlock:lock:${name}`), 'the keys');
      await expect(redlock.acquire(name, 5000)).rejects.toMatchObject({ code: 'RESOURCE_BUSY' });
      await lock.release();
      // Within 1 s, well before the 5 s ttl: released, not expired.
      await until(() => onEveryNode(raw, `redlock:lock:${name}`, false), 'the key gone from every node', 1000);
    } finally {
      await redlock.close();
    }
  });
});

describe('secrets', () => {
  it('lock values are 160 random bits, distinct, and never in events, errors, JSON or inspect', async () => {
    const events: LockEvent[] = [];
    const redlock = new Redlock({ nodes: fleet.urls, retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT, onEvent: (e) => events.push(e) });
    try {
      const values = new Set<string>();
      const leaks: string[] = [];
      for (let i = 0; i < 50; i++) {
        const lock = await redlock.acquire('secret', 5000);
        await until(async () => (await raw[0]!.exists('redlock:lock:secret')) === 1, 'the key');
        const value = (await raw[0]!.get('redlock:lock:secret'))!;
        expect(Buffer.from(value, 'base64url')).toHaveLength(20);
        values.add(value);
        const busy = await redlock.acquire('secret', 5000).catch((e: Error) => e);
        leaks.push(JSON.stringify(lock), inspect(lock, { depth: 5 }), String(busy), inspect(busy, { depth: 5 }));
        await lock.release();
        const haystack = leaks.join('\n') + JSON.stringify(events);
        expect(haystack).not.toContain(value);
      }
      expect(values.size).toBe(50);
    } finally {
      await redlock.close();
    }
  });

  it('passes a password through to ioredis and never shows it', async () => {
    const good = new Redlock({ nodes: secured.urls.map((u) => u.replace('redis://', 'redis://:pa55-word-x@')), retryCount: 0 });
    const lock = await good.acquire('with-auth', 5000);
    await lock.release();
    expect(good.nodeLabels.join()).not.toContain('pa55');
    await good.close();

    const events: LockEvent[] = [];
    const wrong = new Redlock({
      nodes: secured.urls.map((u) => u.replace('redis://', 'redis://:wrong-secret-y@')),
      retryCount: 0,
      onEvent: (e) => events.push(e),
    });
    const error = await wrong.acquire('with-auth', 5000).catch((e: Error) => e);
    // The health check says why, not only that the connection is not writeable.
    const health = await wrong.ping();
    await wrong.close();
    expect(health.map((node) => node.error)).toEqual(health.map(() => expect.stringMatching(/WRONGPASS/)));
    expect(error).toMatchObject({ code: 'QUORUM_UNREACHABLE' });
    const nodeErrors = events.filter((e) => e.type === 'node-error');
    expect(nodeErrors.length).toBeGreaterThan(0);
    // The node is named, the failure said, the password never shown.
    expect(nodeErrors[0]).toMatchObject({ node: expect.stringMatching(/^127\.0\.0\.1:\d+\/0$/) });
    expect(JSON.stringify(nodeErrors)).toMatch(/WRONGPASS|invalid/i);
    const haystack = JSON.stringify(events) + String(error) + inspect(error, { depth: 6 }) + JSON.stringify(health);
    expect(haystack).not.toContain('wrong-secret-y');
  });

  it.each([
    ['connections it opens from URLs', () => secured.urls.map((u) => u.replace('redis://', 'redis://:pa55-word-x@'))],
    // An application's own clients keep their offline queue: the adapter refuses lock commands while they reconnect.
    ["the application's clients", () => secured.urls.map((u) => new Redis(u, { password: 'pa55-word-x', ...QUICK_CLOSE }))],
  ])('says a rotated password is why a node it was connected to fails now, over %s', async (_label, nodesOf) => {
    const nodes = nodesOf();
    const events: LockEvent[] = [];
    const redlock = new Redlock({ nodes, retryCount: 0, nodeTimeout: TEST_NODE_TIMEOUT, onEvent: (e) => events.push(e) });
    const admins = secured.urls.map((u) => new Redis(u, { password: 'pa55-word-x' }));
    try {
      await (await redlock.acquire('rotated', 5000)).release();
      // The servers' password changes; connections made before keep theirs until they drop.
      for (const admin of admins) {
        await admin.config('SET', 'requirepass', 'n3w-pa55-z');
        await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      }
      // Every node has failed to log in again since (the node keeps that error before the event is emitted).
      await until(() => {
        const failed = new Set(events.flatMap((e) => (e.type === 'node-error' && /WRONGPASS/.test(e.message) ? [e.node] : [])));
        return failed.size === nodes.length;
      }, 'every node down for its password');
      // Whether a node's client refuses the command between connections or fails it on its next
      // login, the node's error says why; a command still queued when the node timeout ends has none.
      const reports: NodeReport[] = [];
      for (let i = 0; i < 5; i++) {
        const error = (await redlock.acquire('rotated', 5000).catch((e: unknown) => e)) as QuorumUnreachableError;
        expect(error).toMatchObject({ code: 'QUORUM_UNREACHABLE' });
        reports.push(...error.attempts.flatMap((attempt) => attempt.nodes));
        expect(error.message + JSON.stringify(error.attempts)).not.toMatch(/pa55/);
      }
      const errors = reports.filter((report) => report.outcome === 'error').map((report) => report.error);
      expect(errors.length).toBeGreaterThan(0);
      expect(errors).toEqual(errors.map(() => expect.stringMatching(/WRONGPASS/)));
      // Health says the same at once: a PING is not queued in a reconnecting client to time out.
      const health = await redlock.ping();
      expect(health.map((node) => node.error)).toEqual(health.map(() => expect.stringMatching(/^not connected \(.*WRONGPASS/)));
      expect(JSON.stringify(health)).not.toMatch(/pa55/);
    } finally {
      await Promise.all(admins.map((admin) => admin.config('SET', 'requirepass', 'pa55-word-x').finally(() => admin.disconnect())));
      await redlock.close();
      for (const node of nodes) if (typeof node !== 'string') node.disconnect();
    }
  });
});

describe('nothing a lock holds is rendered by loggers (issue 18.1)', () => {
  /** Every way an application prints a lock and its client: inspect at any depth, with and without custom inspection, JSON, Nest's ConsoleLogger. */
  const renderings = (value: unknown): string[] => {
    const out = [
      inspect(value),
      inspect(value, { depth: Infinity, showHidden: true }),
      inspect(value, { depth: Infinity, showHidden: true, customInspect: false, getters: true }),
      JSON.stringify(value) ?? '',
    ];
    const logger = new ConsoleLogger('leak-test');
    const written: string[] = [];
    const write = process.stdout.write;
    process.stdout.write = ((chunk: string | Uint8Array) => (written.push(String(chunk)), true)) as typeof process.stdout.write;
    try {
      logger.log(value);
      new ConsoleLogger('leak-test', { depth: Infinity } as object).log(value);
      new ConsoleLogger('leak-test', { json: true } as object).log(value);
    } finally {
      process.stdout.write = write;
    }
    return [...out, ...written];
  };

  it('shows no lock value, no random bytes and no password from a Lock, its Redlock, a LockService or an event', async () => {
    const events: LockEvent[] = [];
    const password = 'pa55-word-x';
    const options = {
      nodes: secured.urls.map((u) => u.replace('redis://', `redis://:${password}@`)),
      retryCount: 0,
      nodeTimeout: TEST_NODE_TIMEOUT,
      onEvent: (e: LockEvent) => events.push(e),
    };
    const redlock = new Redlock(options);
    const service = new LockService(redlock, options);
    try {
      const locks = [await redlock.acquire('leak-a', 5000), await redlock.acquire('leak-b', 5000)];
      const check = new Redis(secured.urls[0]!, { password });
      // Decided at a quorum: node 0 may get its SET after acquire() returned.
      const read = () => Promise.all(['leak-a', 'leak-b'].map((r) => check.get(`redlock:lock:${r}`)));
      await until(async () => (await read()).every((v) => v !== null), 'both locks on node 0');
      const values = await read();
      check.disconnect();
      expect(values.every((v) => typeof v === 'string' && v.length >= 27)).toBe(true);
      const haystack = [...locks, redlock, service, events].flatMap(renderings).join('\n');
      for (const value of values) {
        // The value as stored, its raw bytes (as a Buffer would render them) and its first bytes.
        const bytes = Buffer.from(value!.slice(0, 27), 'base64url');
        expect(haystack).not.toContain(value!.slice(0, 27));
        expect(haystack).not.toContain(bytes.toString('hex').slice(0, 12));
        expect(haystack).not.toContain([...bytes.subarray(0, 4)].map((b) => b.toString(16).padStart(2, '0')).join(' '));
      }
      expect(haystack).not.toContain(password);
      expect(haystack).not.toMatch(/<Buffer/);
      await Promise.all(locks.map((l) => l.release()));
    } finally {
      await redlock.close();
    }
  });
});
