import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { hostname } from 'node:os';
import { Redlock } from '../../lib/index.js';
import { main } from '../../lib/cli/main.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';
import { TEST_NODE_TIMEOUT } from '../support/timeouts.js';

let fleet: RedisFleet;
beforeAll(async () => {
  fleet = await startFleet(3);
});
afterAll(async () => {
  await fleet?.stop();
});

describe('inspection', () => {
  it('says who holds a resource, where and for how long, never the lock value', async () => {
    const holder = new Redlock({ nodes: fleet.urls, identity: { app: 'billing' } });
    const anonymous = new Redlock({ nodes: fleet.urls, identity: true });
    try {
      const lock = await holder.acquire('stuck-job', 30_000);
      // The acquire was decided at a quorum: the last node may still be answering.
      await until(async () => (await anonymous.inspect('stuck-job')).heldOn === 3, 'the holder on every node');
      const inspection = await anonymous.inspect('stuck-job');
      expect(inspection).toMatchObject({ resource: 'stuck-job', held: true, heldOn: 3, quorum: 2, identity: { app: 'billing' } });
      expect(inspection.ttl).toBeGreaterThan(29_000);
      expect(inspection.nodes.every((n) => n.state === 'held' && n.holder === inspection.holder)).toBe(true);
      expect(inspection.fencingCounter).toBeGreaterThanOrEqual(lock.fencingToken!);

      const lines: string[] = [];
      expect(await main(['inspect', 'stuck-job', '--nodes', fleet.urls.join(',')], (l) => lines.push(l))).toBe(0);
      expect(lines.join('\n')).toContain('"stuck-job" is HELD by billing');
      await lock.release();

      const mine = await anonymous.acquire('mine', 5000);
      expect((await holder.inspect('mine')).identity).toEqual({ host: hostname(), pid: process.pid });
      await mine.release();
      await until(async () => (await holder.inspect('mine')).heldOn === 0, 'the release on every node');
      expect(await holder.inspect('mine')).toMatchObject({ held: false, heldOn: 0 });

      // Nothing of the value is shown: only a fingerprint.
      const json: string[] = [];
      await main(['inspect', 'stuck-job', '--nodes', fleet.urls.join(','), '--json'], (l) => json.push(l));
      expect(JSON.parse(json[0]!)).toMatchObject({ held: false });
    } finally {
      await Promise.all([holder.close(), anonymous.close()]);
    }
  });

  it('lists locks and force-releases one from the command line, finding keys with SCAN, never KEYS', async () => {
    const holder = new Redlock({ nodes: fleet.urls, identity: { app: 'billing' }, nodeTimeout: TEST_NODE_TIMEOUT });
    const stats = fleet.urls.map((url) => new Redis(url));
    const nodes = ['--nodes', fleet.urls.join(',')];
    try {
      await Promise.all(stats.map((r) => r.config('RESETSTAT')));
      const lock = await holder.acquire('cli:stuck', 30_000);
      await until(async () => (await holder.inspect('cli:stuck')).heldOn === 3, 'the holder on every node');
      const lines: string[] = [];
      expect(await main(['list', 'cli:*', ...nodes], (l) => lines.push(l))).toBe(0);
      expect(lines.join('\n')).toMatch(
        /"cli:stuck" HELD by billing \(holder [0-9a-f]{12}\) on 3\/3 nodes, \d+ ms left, token \d+, 0 waiting/,
      );
      const json: string[] = [];
      expect(await main(['list', '--json', ...nodes], (l) => json.push(l))).toBe(0);
      expect(JSON.parse(json[0]!)).toMatchObject({ truncated: false, locks: [{ resource: 'cli:stuck', held: true }] });
      expect(await main(['list', '--limit', 'many', ...nodes], () => undefined)).toBe(2);

      // release needs --force; --holder names the holder it may evict.
      expect(await main(['release', 'cli:stuck', ...nodes], () => undefined)).toBe(2);
      expect(await main(['release', '--force', 'cli:stuck', '--holder', '0123456789ab', ...nodes], () => undefined)).toBe(3);
      const out: string[] = [];
      const { holder: fingerprint } = await holder.inspect('cli:stuck');
      expect(await main(['release', '--force', 'cli:stuck', '--holder', fingerprint!, ...nodes], (l) => out.push(l))).toBe(0);
      expect(out.join('\n')).toMatch(/"cli:stuck" force-released by billing .* on 3\/3 nodes\nfencing counter raised to \d+/);
      await expect(lock.extend()).rejects.toMatchObject({ code: 'LOCK_LOST', reason: 'keys-gone' });

      const commands = (await Promise.all(stats.map((r) => r.info('commandstats')))).join('\n');
      expect(commands).toMatch(/cmdstat_scan:calls=/);
      expect(commands).not.toMatch(/cmdstat_keys:/);
    } finally {
      stats.forEach((r) => r.disconnect());
      await holder.close();
    }
  });

  it('reports nodes that are down, and exits non-zero without a quorum', async () => {
    await fleet.kill(0);
    await fleet.kill(1);
    const lines: string[] = [];
    const url = (u: string) => u.replace('redis://', 'redis://:s3cret-pw@');
    const code = await main(['inspect', 'x', '--nodes', fleet.urls.map(url).join(',')], (l) => lines.push(l));
    expect(code).toBe(1);
    expect(lines.join('\n')).toMatch(/error/);
    expect(lines.join('\n')).not.toContain('s3cret-pw');
    expect(await main(['bogus'], () => undefined)).toBe(2);
  });
});
