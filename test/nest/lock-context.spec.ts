import { describe, expect, it } from '@jest/globals';
import type { Lock } from '../../lib/core/lock.js';
import { LockKindMismatchError } from '../../lib/core/index.js';
import { heldInScope, heldLocks, requestFor, withLock, withRequest, type RequestScope } from '../../lib/nest/lock-context.js';

// Pure: no server. Which lock of the call chain a nested @Locked call re-enters.

/** What heldInScope reads of a lock: its resources, whether it is still held, and its kind. */
const lock = (resources: string[], isHeld = true, kind: { limit?: number; mode?: 'read' | 'write' } = {}) =>
  ({ resources, isHeld, ...kind }) as unknown as Lock;

describe('heldInScope', () => {
  it('is the lock that holds every resource asked for (a re-entrant call)', () => {
    const outer = lock(['order:1', 'stock:1']);
    expect(heldInScope(['order:1'], [outer])?.lock).toBe(outer);
    expect(heldInScope(['stock:1', 'order:1'], [outer])?.lock).toBe(outer);
  });

  it('is the innermost of several locks that each hold them all', () => {
    const outer = lock(['a', 'b']);
    const inner = lock(['a', 'b', 'c']);
    expect(heldInScope(['a', 'b'], [outer, inner])?.lock).toBe(inner);
  });

  it('prefers a lock covering them all over an inner one covering some', () => {
    const outer = lock(['a', 'b']);
    const inner = lock(['a']);
    expect(heldInScope(['a', 'b'], [outer, inner])?.lock).toBe(outer);
  });

  it('with the resources spread over several locks, is the innermost of those', () => {
    const first = lock(['a']);
    const second = lock(['b']);
    const unrelated = lock(['z']);
    expect(heldInScope(['a', 'b'], [first, second, unrelated])?.lock).toBe(second);
    expect(heldInScope(['b', 'a'], [second, first])?.lock).toBe(first);
  });

  it('counts a call on resources spread over several locks on each of them, once', () => {
    const first = lock(['a']);
    const second = lock(['b', 'c']);
    expect(heldInScope(['a', 'b', 'c'], [first, second, lock(['z'])])?.owners).toEqual([first, second]);
    expect(heldInScope(['b', 'c'], [first, second])?.owners).toEqual([second]);
  });

  it('is undefined when some resource is not held in this chain', () => {
    expect(heldInScope(['a', 'b'], [lock(['a'])])).toBeUndefined();
    expect(heldInScope(['a'], [])).toBeUndefined();
  });

  it('skips locks no longer held (expired or lost)', () => {
    const lost = lock(['a'], false);
    expect(heldInScope(['a'], [lost])).toBeUndefined();
    const outer = lock(['a']);
    expect(heldInScope(['a'], [outer, lost])?.lock).toBe(outer);
  });
});

describe('heldInScope, by kind', () => {
  const mismatch = (message: RegExp) => expect.objectContaining({ code: 'LOCK_KIND_MISMATCH', message: expect.stringMatching(message) });

  it('re-enters a lock of the kind asked; a write lock serves a read', () => {
    const permit = lock(['pool'], true, { limit: 3 });
    expect(heldInScope(['pool'], [permit], { limit: 3 })?.lock).toBe(permit);
    const writer = lock(['catalog'], true, { mode: 'write' });
    expect(heldInScope(['catalog'], [writer], { mode: 'read' })?.lock).toBe(writer);
    expect(heldInScope(['catalog'], [writer], { mode: 'write' })?.lock).toBe(writer);
    const reader = lock(['catalog'], true, { mode: 'read' });
    expect(heldInScope(['catalog'], [reader], { mode: 'read' })?.lock).toBe(reader);
  });

  it('refuses, typed, a write inside a read lock (no upgrade), and any other kind', () => {
    let thrown: unknown;
    try {
      heldInScope(['catalog'], [lock(['catalog'], true, { mode: 'read' })], { mode: 'write' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LockKindMismatchError);
    expect(thrown).toEqual(
      mismatch(/read lock held by this call chain \(a read lock is not upgraded to a write lock\); this call asked for a write lock/),
    );
    expect(() => heldInScope(['pool'], [lock(['pool'], true, { limit: 3 })])).toThrow(
      mismatch(/semaphore \(limit 3\) held .*asked for a mutex/),
    );
    expect(() => heldInScope(['pool'], [lock(['pool'], true, { limit: 3 })], { limit: 2 })).toThrow(
      mismatch(/asked for a semaphore \(limit 2\)/),
    );
    expect(() => heldInScope(['a'], [lock(['a'])], { mode: 'read' })).toThrow(mismatch(/mutex held .*asked for a read lock/));
    expect(() => heldInScope(['a'], [lock(['a'], true, { mode: 'write' })])).toThrow(mismatch(/write lock held/));
  });

  it('checks every lock the resources are spread over', () => {
    expect(() => heldInScope(['a', 'b'], [lock(['a']), lock(['b'], true, { limit: 2 })])).toThrow(mismatch(/semaphore/));
  });

  it('does not judge locks no longer held', () => {
    expect(heldInScope(['a'], [lock(['a'], false, { mode: 'read' })], { mode: 'write' })).toBeUndefined();
  });
});

describe('the call chain (AsyncLocalStorage)', () => {
  it('withLock adds a lock for the code it runs, across awaits, and only there', async () => {
    const outer = lock(['a']);
    const inner = lock(['b']);
    expect(heldLocks()).toEqual([]);
    await withLock(outer, async () => {
      await Promise.resolve();
      expect(heldLocks()).toEqual([outer]);
      await withLock(inner, async () => {
        await new Promise((resolve) => setImmediate(resolve));
        expect(heldLocks()).toEqual([outer, inner]);
        expect(heldInScope(['a', 'b'])?.lock).toBe(inner);
        expect(heldInScope(['a'])?.lock).toBe(outer);
      });
      expect(heldLocks()).toEqual([outer]);
    });
    expect(heldLocks()).toEqual([]);
  });

  it('withLock can start from another chain than the current one', () => {
    const current = lock(['a']);
    const other = lock(['b']);
    const added = lock(['c']);
    withLock(current, () => {
      withLock(added, () => expect(heldLocks()).toEqual([other, added]), [other]);
    });
  });

  it("withRequest keeps the chain's locks; requestFor answers only for the same handler metadata", () => {
    const metadata = {};
    const request: RequestScope = { metadata, type: 'http', request: { params: { id: '1' } } };
    const outer = lock(['a']);
    withLock(outer, () =>
      withRequest(request, () => {
        expect(heldLocks()).toEqual([outer]);
        expect(requestFor(metadata)).toBe(request);
        expect(requestFor({})).toBeUndefined();
      }),
    );
    expect(requestFor(metadata)).toBeUndefined();
  });

  it('withLock does not pass the request on to the code it runs', () => {
    const metadata = {};
    withRequest({ metadata, type: 'rpc', request: { data: 1 } }, () => {
      withLock(lock(['a']), () => expect(requestFor(metadata)).toBeUndefined());
    });
  });
});
