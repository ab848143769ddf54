/**
 * The public API as a user's compiler sees it: the package's own declarations
 * (dist/, built with `stripInternal`), checked with `skipLibCheck: false`.
 * Run by `npm run test:types`. A change here is a change to the public API.
 */
import 'reflect-metadata';
import type { Observable } from 'rxjs';
import {
  ClientClosedError,
  InvalidArgumentError,
  Lock,
  LockAbortedError,
  LockBusyException,
  LockError,
  LockLostError,
  LockService,
  LockUnavailableException,
  Locked,
  NotLockedError,
  assertLocked,
  LockGraphQLError,
  MemoryFencedStore,
  QuorumUnreachableError,
  RedisFencedStore,
  Redlock,
  RedlockModule,
  ResourceBusyError,
  StaleTokenError,
  Unlocked,
  ofLockEvent,
  type BusyContext,
  type ForceReleaseResult,
  type LockListing,
  type ResourceHolder,
  type ResourceKind,
  type AcquireOptions,
  type LockEvent,
  type LockedOptions,
  type LostReason,
  type NodeSpec,
  type RedlockModuleOptions,
  type RedlockOptions,
} from 'nest-redlock';
import { RedlockTestingModule, createMemoryNodes, createMemoryRedlock } from 'nest-redlock/testing';
import { RedlockHealthIndicator } from 'nest-redlock/health';

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const exactly = <A, B>(_proof: Equals<A, B>) => undefined;

// The reasons a lock is lost, as its `lost` event and LockLostError carry them.
exactly<LostReason, 'expired' | 'keys-gone' | 'shutdown'>(true);
exactly<LockLostError['reason'], LostReason | 'released'>(true);

// Nodes: URLs, ioredis options, ioredis clients of any copy, the in-memory nodes.
const options: RedlockOptions = { nodes: ['redis://127.0.0.1:6379', { host: '127.0.0.1', port: 6380 }] };
const specs: NodeSpec[] = createMemoryNodes(3);
const redlock = new Redlock({ ...options, nodes: specs });

async function core(): Promise<void> {
  const lock: Lock = await redlock.acquire('a', 1000, { autoExtend: true } satisfies AcquireOptions);
  const token: number | undefined = lock.fencingToken;
  const signal: AbortSignal = lock.signal;
  lock.assertHeld();
  await lock.extend(2000);
  await lock.release();
  const result: string = await redlock.using(['a', 'b'], 1000, async (held) => String(held.fencingToken));
  redlock.subscribe((event: LockEvent) => void event.type);
  {
    await using disposed: Lock = await redlock.acquire('c', 1000);
    void disposed;
  }
  const listing: LockListing = await redlock.list('a*', { limit: 10 });
  const evicted: ForceReleaseResult = await redlock.forceRelease('a', { holder: '0123456789ab' });
  const stats: { readonly held: number; readonly waiting: number } = redlock.stats;
  const under: Lock = assertLocked('a');
  const kind: ResourceKind | undefined = listing.locks[0]?.kind;
  const holders: readonly ResourceHolder[] = listing.locks[0]?.holders ?? [];
  const mode: 'read' | 'write' | undefined = holders[0]?.mode ?? evicted.mode;
  void [listing.locks[0]?.identity, evicted.fencingToken, stats, under, kind, mode];
  await redlock.close({ grace: 100 });
  void [token, signal, result, createMemoryRedlock()];

  // @ts-expect-error internal: a lock is marked lost by its client only
  lock.markLost('expired');
  // @ts-expect-error internal: the client's LockOwner side is not public
  redlock.lost(lock, 'expired');
}

// Every error is a LockError with a machine-readable code.
const errors: LockError[] = [
  new InvalidArgumentError('ttl', 'a positive integer', -1),
  ...([] as (ResourceBusyError | QuorumUnreachableError | LockLostError | LockAbortedError | StaleTokenError | ClientClosedError)[]),
  new NotLockedError('a'),
];
const codes: string[] = errors.map((e) => e.code);

// The Nest layer.
const moduleOptions: RedlockModuleOptions = { nodes: ['redis://127.0.0.1:6379'], shutdownGrace: 5_000 };
RedlockModule.forRoot(moduleOptions);
RedlockModule.forRootAsync({ useFactory: () => moduleOptions });
RedlockTestingModule.forRoot();
const lockedOptions: LockedOptions = { busy: { mode: 'skip' } };
const scheduled: RedlockModuleOptions = { nodes: [], schedule: { ttl: 30_000, perTick: true }, jobBusy: { mode: 'delay', delay: 500 } };
const busyHook = (context: BusyContext) => new Error(`${context.method} ${context.type} ${context.resources.join()}`);
class Jobs {
  tenant = 'acme';
  @Locked('report:{0}', 10_000, lockedOptions)
  async run(_id: string): Promise<void> {}
  @Locked<[string], Jobs>(({ self, args }) => `import:${self.tenant}:${args[0]}`, 10_000, { busy: { mode: 'throw', exception: busyHook } })
  async import(_file: string): Promise<void> {}
  @Unlocked()
  async local(): Promise<void> {}
}
exactly<LockGraphQLError['extensions']['code'], 'RESOURCE_BUSY' | 'QUORUM_UNREACHABLE' | 'CLIENT_CLOSED'>(true);
function service(locks: LockService): Observable<unknown>[] {
  // @ts-expect-error internal: the @Locked runner's entry point
  void locks.run;
  // @ts-expect-error internal: the telemetry's method attribution
  void locks.attribution;
  void [locks.list('orders:*'), locks.forceRelease('orders:42')];
  return [locks.events$, locks.lost$, locks.events$.pipe(ofLockEvent('lost'))];
}

void [
  core,
  codes,
  Jobs,
  scheduled,
  service,
  MemoryFencedStore,
  RedisFencedStore,
  LockBusyException,
  LockUnavailableException,
  RedlockHealthIndicator,
];
