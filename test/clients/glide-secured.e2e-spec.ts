import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { GlideClient } from '@valkey/valkey-glide';
import { Redlock } from '../../lib/index.js';
import { glideClient } from '../support/glide.js';
import { startFleet, type RedisFleet } from '../support/redis-fleet.js';
import { until } from '../support/until.js';

// GLIDE clients over TLS (a self-signed certificate made here): the lock client and its
// subscriber clients use the node client's TLS settings as they are.
const dir = mkdtempSync(join(tmpdir(), 'redlock-glide-tls-'));
let fleets: RedisFleet[];
let clients: GlideClient[];

/** Runs openssl with `args` in `dir`. */
const openssl = (...args: string[]) => promisify(execFile)('openssl', args, { cwd: dir });

beforeAll(async () => {
  // A CA and a server certificate it signed: GLIDE (rustls) refuses a self-signed CA certificate as the server's own.
  await openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=test-ca',
    '-keyout',
    'ca-key.pem',
    '-out',
    'ca.pem',
  );
  await openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'key.pem', '-out', 'csr.pem');
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n');
  await openssl(
    'x509',
    '-req',
    '-in',
    'csr.pem',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca-key.pem',
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    'ext.cnf',
    '-out',
    'cert.pem',
  );
  const tlsArgs = (port: number) => [
    '--tls-port',
    String(port),
    '--tls-cert-file',
    join(dir, 'cert.pem'),
    '--tls-key-file',
    join(dir, 'key.pem'),
    '--tls-ca-cert-file',
    join(dir, 'ca.pem'),
    '--tls-auth-clients',
    'no',
  ];
  const tlsFleet = () => startFleet(1, { extraPorts: 1, args: ([port]) => tlsArgs(port!) });
  fleets = await Promise.all([tlsFleet(), tlsFleet(), tlsFleet()]);
  const ports = fleets.map((fleet) => fleet.nodes[0]!.extraPorts[0]!);
  const ca = readFileSync(join(dir, 'ca.pem'));
  clients = await Promise.all(
    ports.map((port) => glideClient(port, { useTLS: true, advancedConfiguration: { tlsAdvancedConfiguration: { rootCertificates: ca } } })),
  );
});

afterAll(async () => {
  clients?.forEach((c) => c.close());
  await Promise.all((fleets ?? []).map((f) => f.stop()));
  rmSync(dir, { recursive: true, force: true });
});

describe('GLIDE clients over TLS', () => {
  it('lock, and wake waiters over subscriber clients made with the same TLS settings', async () => {
    const holder = new Redlock({ nodes: clients });
    const waiter = new Redlock({ nodes: clients, retryDelay: 5000, retryJitter: 0 });
    try {
      const held = await holder.acquire('tls', 5000);
      const started = performance.now();
      const waiting = waiter.acquire('tls', 5000);
      await until(async () => (await holder.inspect('tls')).waiters > 0, 'the waiter in the queue');
      await held.release();
      await (await waiting).release();
      expect(performance.now() - started).toBeLessThan(2500); // woken, not polled after 5 s
    } finally {
      await Promise.all([holder.close(), waiter.close()]);
    }
  });
});
