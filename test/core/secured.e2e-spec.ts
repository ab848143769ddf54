import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redlock, type LockEvent } from '../../lib/index.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { checkedCommand } from '../support/resp.js';
import { until } from '../support/until.js';
import { closeClient, connected, NODE_REDIS_VERSIONS, type NodeRedisClient } from '../support/node-redis-clients.js';

const dir = mkdtempSync(join(tmpdir(), 'redlock-tls-'));
let tlsFleets: RedisFleet[];
let aclFleet: RedisFleet;
let tlsPorts: number[];
let ca: Buffer;

beforeAll(async () => {
  // A self-signed certificate made here; the nodes listen for TLS on a second port.
  await promisify(execFile)('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    join(dir, 'key.pem'),
    '-out',
    join(dir, 'cert.pem'),
  ]);
  ca = readFileSync(join(dir, 'cert.pem'));
  const tlsArgs = (port: number) => [
    '--tls-port',
    String(port),
    '--tls-cert-file',
    join(dir, 'cert.pem'),
    '--tls-key-file',
    join(dir, 'key.pem'),
    '--tls-ca-cert-file',
    join(dir, 'cert.pem'),
    '--tls-auth-clients',
    'no',
  ];
  const tlsFleet = () => startFleet(1, { extraPorts: 1, args: ([port]) => tlsArgs(port!) });
  const started = await Promise.all([tlsFleet(), tlsFleet(), tlsFleet(), startFleet(3)]);
  tlsFleets = started.slice(0, 3);
  tlsPorts = tlsFleets.map((fleet) => fleet.nodes[0]!.extraPorts[0]!);
  aclFleet = started[3]!;
  // An ACL user limited to what the README says the client needs: the keys `redlock:*` and the
  // channels `redlock:wake:*`. `resetchannels` first: a Redis 6.2-based server (KeyDB) defaults
  // to `acl-pubsub-default allchannels`, and refuses a channel pattern added after the implicit
  // `&*`; Redis 7 and Valkey start from no channels.
  for (const node of aclFleet.nodes) {
    await checkedCommand(node.port, [
      'ACL',
      'SETUSER',
      'locker',
      'on',
      '>locker-pw',
      '~redlock:*',
      'resetchannels',
      '&redlock:wake:*',
      '+@all',
    ]);
    // The same, without INFO (which the restart guard reads).
    await checkedCommand(node.port, [
      'ACL',
      'SETUSER',
      'noinfo',
      'on',
      '>noinfo-pw',
      '~redlock:*',
      'resetchannels',
      '&redlock:wake:*',
      '+@all',
      '-info',
    ]);
    // Keys, but no channel: not what the README says, and easily done on Redis 7 (no channels by default).
    await checkedCommand(node.port, ['ACL', 'SETUSER', 'nochan', 'on', '>nochan-pw', '~redlock:*', 'resetchannels', '+@all']);
  }
});

afterAll(async () => {
  await Promise.all([...(tlsFleets ?? []).map((f) => f.stop()), aclFleet?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('secured nodes', () => {
  it('locks over TLS with the options passed through to ioredis', async () => {
    const redlock = new Redlock({ nodes: tlsPorts.map((port) => ({ host: '127.0.0.1', port, tls: { ca } })) });
    try {
      const lock = await redlock.acquire('over-tls', 5000);
      expect(lock.fencingToken).toBeGreaterThan(0);
      await lock.release();
    } finally {
      await redlock.close();
    }
  });

  it('names the node, not the certificate or a secret, when TLS verification fails', async () => {
    const events: LockEvent[] = [];
    const redlock = new Redlock({
      nodes: tlsPorts.map((port) => ({ host: '127.0.0.1', port, tls: {}, password: 'tls-secret-z' })),
      retryCount: 0,
      onEvent: (e) => events.push(e),
    });
    const error = await redlock.acquire('over-tls', 5000).catch((e: Error) => e);
    // The round is decided once a majority has failed; ioredis keeps reconnecting, and failing,
    // so every node reports in time, in no fixed order.
    const labels = tlsPorts.map((port) => `127.0.0.1:${port}/0`);
    const named = () => new Set(events.flatMap((e) => (e.type === 'node-error' ? [e.node] : [])));
    try {
      await until(() => named().size === labels.length, 'a node-error from every node');
    } finally {
      await redlock.close();
    }
    expect(error).toMatchObject({ code: 'QUORUM_UNREACHABLE' });
    expect([...named()].sort()).toEqual([...labels].sort());
    expect(JSON.stringify(events) + String(error)).not.toContain('tls-secret-z');
  });

  it('an ACL user that may not run INFO: the default guard says so and locks; an explicit guard says why no vote counts (issue 18.12)', async () => {
    const nodes = aclFleet.nodes.map((n) => `redis://noinfo:noinfo-pw@127.0.0.1:${n.port}`);
    const events: LockEvent[] = [];
    const byDefault = new Redlock({ nodes, retryCount: 0, onEvent: (e) => events.push(e) });
    const explicit = new Redlock({ nodes, retryCount: 0, restartGuard: 10_000, onEvent: (e) => events.push(e) });
    try {
      await (await byDefault.acquire('no-info', 5000)).release();
      const refused = (await explicit.acquire('no-info', 5000).catch((e: unknown) => e)) as Error;
      expect(refused).toMatchObject({ code: 'QUORUM_UNREACHABLE' });
      expect(refused.message).toMatch(/restart guard/);
      const messages = events.filter((e) => e.type === 'node-error').map((e) => (e as { message: string }).message);
      expect(messages.some((m) => /cannot read INFO.*count without the guard.*\+info/.test(m))).toBe(true);
      expect(messages.some((m) => /cannot read INFO.*not counted.*\+info/.test(m))).toBe(true);
      expect(events.some((e) => e.type === 'node-restarted')).toBe(false); // not reported as a restart
    } finally {
      await Promise.all([byDefault.close(), explicit.close()]);
    }
  });

  it('works as an ACL user limited to the lock namespace', async () => {
    const nodes = aclFleet.nodes.map((n) => `redis://locker:locker-pw@127.0.0.1:${n.port}`);
    const redlock = new Redlock({ nodes, retryDelay: 5000, retryJitter: 0 });
    const other = new Redlock({ nodes });
    try {
      const held = await redlock.acquire('acl', 5000);
      const waiting = other.acquire('acl', 5000); // queue keys inside redlock:*, wake-ups on redlock:wake:*
      await held.release();
      await (await waiting).release();
      const outside = new Redlock({ nodes, prefix: 'other:', retryCount: 0 });
      await expect(outside.acquire('acl', 5000)).rejects.toMatchObject({ code: 'QUORUM_UNREACHABLE' });
      await outside.close();
    } finally {
      await Promise.all([redlock.close(), other.close()]);
    }
  });
});

describe('an ACL user without the wake channels', () => {
  it('says so in a node-error per node, and a release that hands the lock to a waiter resolves (the waiter polls)', async () => {
    const nodes = aclFleet.nodes.map((n) => `redis://nochan:nochan-pw@127.0.0.1:${n.port}`);
    const events: LockEvent[] = [];
    const holder = new Redlock({ nodes, onEvent: (e) => events.push(e) });
    const waiter = new Redlock({ nodes, retryDelay: 100, retryJitter: 0 });
    try {
      const held = await holder.acquire('no-channels', 5000);
      const waiting = waiter.acquire('no-channels', 5000);
      await until(async () => (await holder.inspect('no-channels')).waiters > 0, 'the waiter in the queue');
      // Its PUBLISH refused, the release script failed after it had deleted the key and handed it over.
      await held.release();
      await (await waiting).release();
      const refusals = () => events.filter((e) => e.type === 'node-error' && /wake/.test(e.message) && /&redlock:wake:\*/.test(e.message));
      await until(() => refusals().length === nodes.length, 'a node-error from every node');
      expect(JSON.stringify(events)).not.toContain('nochan-pw');
    } finally {
      await Promise.all([holder.close(), waiter.close()]);
    }
  });
});

describe.each(NODE_REDIS_VERSIONS)('secured nodes through node-redis clients: $name', (version) => {
  it('locks and wakes a waiter over TLS (its options passed through to the wake-up connections) and as the ACL user', async () => {
    const tls = () => tlsPorts.map((port) => connected(version.client(`rediss://127.0.0.1:${port}`, { socket: { tls: true, ca } })));
    const acl = () => aclFleet.nodes.map((n) => connected(version.client(`redis://locker:locker-pw@127.0.0.1:${n.port}`)));
    for (const open of [tls, acl]) {
      const nodes: NodeRedisClient[] = await Promise.all(open());
      const holder = new Redlock({ nodes: nodes as never[] });
      const waiter = new Redlock({ nodes: nodes as never[], retryDelay: 5000, retryJitter: 0 });
      try {
        const held = await holder.acquire('secured', 5000);
        const waiting = waiter.acquire('secured', 5000);
        await until(async () => (await holder.inspect('secured')).waiters > 0, 'the waiter in the queue');
        const released = performance.now();
        await held.release();
        await (await waiting).release();
        expect(performance.now() - released).toBeLessThan(2500); // woken, not polled after 5 s
      } finally {
        await Promise.all([holder.close(), waiter.close()]);
        await Promise.all(nodes.map(closeClient));
      }
    }
  });
});
