import type { Grant, WakeNotifier } from './wake-notifier.js';
import { packedMap } from './packed.js';

/** What a wait follows: the attempt, and which nodes' hand-overs of it may count (see `Turn.handedOver`). */
export interface AwaitedHandOver {
  readonly attempt: number;
  readonly eligible: readonly boolean[];
  readonly quorum: number;
  /** A semaphore's permit: a quorum of hand-overs counts whatever their tokens (see `Turn.handedOver`). */
  readonly anyToken?: boolean;
  /** How long to wait for the rest of a quorum of hand-overs once one came, ms. */
  readonly grace: number;
  /** A semaphore's: how long to wait for the rest of the nodes' hand-overs once a quorum came at different tokens, ms. */
  readonly rest: number;
}

/**
 * One waiting acquisition's turn-taking: waits for the retry delay, or less
 * when a release names this waiter. A wake-up that arrives during an attempt
 * is kept for the next wait, so it is never lost to timing. A release that
 * hands the lock over (GRANT in scripts.ts) is recorded per node: once a
 * quorum of them came, the wait ends and `handedOver` says so.
 */
export class Turn {
  private wake: (() => void) | undefined;
  private woken = false;
  private readonly unwatch: () => void;
  /** Per node, the last hand-over it announced to this waiter. */
  private readonly grants: (Grant | undefined)[] = [];
  private awaited: AwaitedHandOver | undefined;
  private grace: ReturnType<typeof setTimeout> | undefined;
  /** The grace was cut short: a quorum of a semaphore's hand-overs came, at different tokens (see `heard`). */
  private hurried = false;
  /** Per node, a semaphore's slot a release there found free with nobody queued for it, and woke this waiter to take. */
  private readonly free: (number | undefined)[] = [];

  /** `lookAgain`: the caller already made an attempt (see `WakeNotifier.watch`). */
  constructor(notifier: WakeNotifier, waiter: string, lookAgain: boolean) {
    this.unwatch = notifier.watch(waiter, (node, grant, free) => this.heard(node, grant, free), lookAgain);
  }

  /**
   * Resolves after `delay` ms, at a wake-up, or once the hand-overs of
   * `awaited.attempt` reached a quorum (or one came and the grace ran out:
   * the next attempt finds the lock where it was handed over); resolves true
   * instead when `onStop` (see `Closing.onStop`) calls its listener.
   */
  wait(delay: number, onStop: (stop: () => void) => () => void, awaited?: AwaitedHandOver): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      // Assigned below; onStop may call its listener (finish) at once.
      let timer: ReturnType<typeof setTimeout> | undefined = undefined;
      let forget: (() => void) | undefined = undefined;
      let over = false;
      const finish = (stopped: boolean) => {
        if (over) return;
        over = true;
        clearTimeout(timer);
        clearTimeout(this.grace);
        forget?.();
        this.wake = undefined;
        this.awaited = undefined;
        this.grace = undefined;
        this.hurried = false;
        resolve(stopped);
      };
      forget = onStop(() => finish(true));
      if (over) return;
      if (this.woken) {
        this.woken = false;
        return finish(false);
      }
      timer = setTimeout(() => finish(false), delay);
      this.wake = () => finish(false);
      this.awaited = awaited;
    });
  }

  /**
   * The token, and the nodes that count (`by`), when nodes that refused attempt
   * `attempt` (`eligible`) handed the lock over to this waiter on a quorum, with
   * that many announcing the highest token (as the fencing phase 2 skips its
   * round: see `confirmToken`); undefined otherwise. `storing`: how many of
   * those nodes store the token or more already (a semaphore's waiter writes it
   * back when they are fewer than a quorum, see AcquireLoop.handedOver).
   *
   * Why only those nodes: a node that refused the attempt got no undo from
   * it, and the waiter sends nothing between its attempts, so a key handed
   * over there stays until its ttl. A node the attempt took (then undone) or
   * did not hear from within the node timeout may run that undo after a
   * hand-over, deleting the key. And the attempt number rules out an older
   * hand-over's message, read late: the entry it came from was replaced by
   * the attempt's refusal.
   *
   * A semaphore's permit (`anyToken`) counts a quorum of hand-overs whatever
   * their tokens: the nodes' counters are the resource's, raised by every
   * slot's permits in each node's own order. When every node handed it over,
   * its token is the quorum-th highest they announced, and nothing is written
   * back: a quorum of nodes store at least that (their counters are at their
   * announced tokens or above), and every permit whose acquisition completed
   * before this one began left its token stored on a quorum, which shares a
   * quorum of nodes with all N, each of which raised its counter above that
   * token before announcing this one's, so the quorum-th highest of the N is
   * above it too. With fewer than every node, it is the highest, written back
   * where fewer than a quorum store it. `patient` (while the hand-overs are
   * still coming in): undefined where the quorum's tokens differ and the rest
   * of the nodes may still hand it over, so that the rest are waited for
   * (briefly, `AwaitedHandOver.rest`: see `heard`) rather than a write-back
   * round made.
   */
  handedOver(
    { attempt, eligible, quorum, anyToken }: Omit<AwaitedHandOver, 'grace' | 'rest'>,
    patient = false,
  ): { token: number; by: boolean[]; storing: number } | undefined {
    let token = -1;
    let agree = 0;
    let granted = 0;
    for (let i = 0; i < this.grants.length; i++) {
      const grant = this.grants[i];
      if (!grant || grant.attempt !== attempt || !eligible[i]) continue;
      granted++;
      if (grant.token > token) {
        token = grant.token;
        agree = 1;
      } else if (grant.token === token) agree++;
    }
    if (anyToken && granted >= quorum) {
      const by = packedMap(eligible, (ok, i) => ok && this.grants[i]?.attempt === attempt);
      if (agree >= quorum) return { token, by, storing: agree };
      if (granted === eligible.length) {
        const tokens = packedMap(this.grants, (grant) => grant!.token).sort((a, b) => b - a);
        const kth = tokens[quorum - 1]!;
        return { token: kth, by, storing: tokens.filter((t) => t >= kth).length };
      }
      if (patient && !eligible.includes(false)) return undefined;
      return { token, by, storing: agree };
    }
    if (agree < quorum) return undefined;
    const by = packedMap(eligible, (ok, i) => ok && this.grants[i]?.attempt === attempt && this.grants[i]?.token === token);
    return { token, by, storing: agree };
  }

  /** The slots wake-ups named free (see `free`), one per node that named one; then forgotten. */
  takeFree(): number[] {
    const named: number[] = [];
    for (let i = 0; i < this.free.length; i++) {
      const slot = this.free[i];
      if (slot !== undefined) named.push(slot);
      this.free[i] = undefined;
    }
    return named;
  }

  /** The token node `node` announced in its hand-over, if any. */
  tokenFrom(node: number): number | undefined {
    return this.grants[node]?.token;
  }

  stop(): void {
    this.unwatch();
    clearTimeout(this.grace);
    this.wake = undefined;
  }

  private heard(node: number | undefined, grant: Grant | undefined, free?: number): void {
    if (node !== undefined && grant) this.grants[node] = grant;
    if (free !== undefined && node !== undefined) this.free[node] = free;
    const { wake, awaited } = this;
    if (!wake) {
      this.woken = true;
      return;
    }
    if (!grant || !awaited || grant.attempt !== awaited.attempt || this.handedOver(awaited, true)) return wake();
    // A quorum of a semaphore's hand-overs at different tokens: the rest are waited for
    // briefly (HANDOVERS_REST in acquire-loop.ts), to take the permit without a
    // write-back round (see handedOver).
    if (awaited.anyToken && !this.hurried && this.handedOver(awaited)) {
      this.hurried = true;
      clearTimeout(this.grace);
      this.grace = setTimeout(wake, awaited.rest);
      return;
    }
    // The other nodes' hand-overs follow within moments, unless a node missed the release.
    this.grace ??= setTimeout(wake, awaited.grace);
  }
}
