import type { LockedMetadata } from './locked.metadata.js';

/** Runs a `@Locked` method call (implemented by `LockService`). */
export interface LockedRunner {
  run(metadata: LockedMetadata, self: object, args: unknown[], original: (...args: unknown[]) => unknown): unknown;
}

/**
 * How near a module's `LockService` is to an instance with `@Locked` methods:
 * the nearest serves it. `imports`: the instance's module imports that
 * RedlockModule (or is it); `global`: that RedlockModule is global;
 * `elsewhere`: neither (reached through a module that re-exports it, say).
 */
export const NEARNESS = { imports: 2, global: 1, elsewhere: 0 } as const;

interface Offer {
  readonly runner: LockedRunner;
  readonly nearness: number;
  /** Two modules' runners, alike near, for one instance: neither is picked. */
  readonly ambiguous?: true;
}

/**
 * Which module's `LockService` serves each instance with `@Locked` methods, or
 * the class (its prototype) of request-scoped and transient ones, whose
 * instances come later. Per instance, so that several Nest applications in
 * one process each use their own nodes; several that share a scoped class use
 * the last one registered.
 */
const offers = new WeakMap<object, Offer>();

/**
 * Offers a module's runner for an instance, or for a scoped class's prototype
 * (`perInstance` false). A nearer module's runner already there is kept: with
 * two RedlockModules in an application, a provider uses the one its module
 * imports. Two alike near for one instance make its calls fail, saying so,
 * rather than pick one silently.
 */
export function offerRunner(target: object, runner: LockedRunner, nearness: number, perInstance: boolean): void {
  const known = offers.get(target);
  if (known && known.nearness > nearness) return;
  const rival = known && known.nearness === nearness && (known.ambiguous || known.runner !== runner);
  offers.set(target, rival && perInstance ? { runner, nearness, ambiguous: true } : { runner, nearness });
}

/** A closing module's runner, taken back from a scoped class it was offered for (if still its own). */
export function withdrawRunner(target: object, runner: LockedRunner): void {
  if (offers.get(target)?.runner === runner) offers.delete(target);
}

/** What finds a module's instances with `@Locked` methods and offers them its runner (its LockedExplorer). */
export interface Scanner {
  scan(): unknown;
}

/**
 * Modules that were made but have not finished their init: a call that comes
 * first (from the `onModuleInit` of a provider in a deeper module, which Nest
 * runs before the RedlockModule's) has them scan at once. Held weakly: a
 * testing module compiled and never initialised (a unit test calling a
 * provider straight from `compile()`) runs neither hook that would remove it,
 * and was kept, with its whole container, for the life of the process, and
 * scanned again by every later module's first call.
 */
const pendingScans = new Set<WeakRef<Scanner>>();

export function addPendingScan(scanner: Scanner): () => void {
  const ref = new WeakRef(scanner);
  pendingScans.add(ref);
  return () => void pendingScans.delete(ref);
}

function scanPending(): void {
  for (const ref of [...pendingScans]) {
    const scanner = ref.deref();
    if (scanner) scanner.scan();
    else pendingScans.delete(ref);
  }
}

/** The modules whose init ran and that have not closed: their runner, and their scan. */
const liveModules = new Map<LockedRunner, () => void>();

/** A module that finished its init: it may scan again, and serves instances no scan finds if it is the only one. */
export function addLiveModule(runner: LockedRunner, scan: () => void): () => void {
  liveModules.set(runner, scan);
  return () => void liveModules.delete(runner);
}

function offerFor(instance: object): Offer | undefined {
  return offers.get(instance) ?? offers.get(Object.getPrototypeOf(instance) as object);
}

export function runnerOf(instance: object, metadata: LockedMetadata): LockedRunner {
  let offer = instance ? offerFor(instance) : undefined;
  if (!offer && instance && pendingScans.size > 0) {
    scanPending();
    offer = offerFor(instance);
  }
  if (!offer && instance && liveModules.size > 0) offer = lateOffer(instance);
  if (!offer) {
    const why =
      liveModules.size === 0
        ? 'no RedlockModule is running (import RedlockModule in the module that provides this class, and let Nest create it; ' +
          'or this class was decorated by another copy of nest-redlock than the running module)'
        : 'several RedlockModules are running and none provides this instance: Nest does not know it (made with new or ' +
          'ModuleRef.create()); import RedlockModule in the module that provides this class, and let Nest create it';
    throw new Error(`@Locked ${metadata.method} was called on an instance that no RedlockModule manages: ${why}`);
  }
  if (offer.ambiguous) {
    throw new Error(
      `@Locked ${metadata.method}: several RedlockModules could serve this instance, none nearer than the others ` +
        '(import the one it should use in the module that provides this class)',
    );
  }
  return offer.runner;
}

/**
 * An instance the scans at init did not see. A provider of a module loaded
 * later (LazyModuleLoader, whose modules' init hooks Nest does not run) is
 * found by scanning again (and then known). One Nest does not know
 * (`ModuleRef.create()`, `new`) is served by the one RedlockModule running in
 * the process, if there is one, for as long as it is the one: a test's new
 * application serves an instance made in an earlier test.
 */
function lateOffer(instance: object): Offer | undefined {
  const known = fallbacks.get(instance);
  if (known && liveModules.size === 1 && liveModules.has(known)) return { runner: known, nearness: FALLBACK };
  for (const scan of [...liveModules.values()]) scan();
  const found = offerFor(instance);
  if (found || liveModules.size !== 1) return found;
  const [only] = liveModules.keys();
  fallbacks.set(instance, only!);
  return { runner: only!, nearness: FALLBACK };
}

/** Instances no module provides, and the one module running when they were called: used again only while it is the one. */
const fallbacks = new WeakMap<object, LockedRunner>();
const FALLBACK = NEARNESS.elsewhere - 1;
