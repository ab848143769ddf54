import { describe, expect, it } from '@jest/globals';
import type { LockNode } from '../../lib/core/node.js';
import { broadcast, type Verdict } from '../../lib/core/round.js';
import type { Done } from '../../lib/core/scripts.js';

// Pure: no server. One round over fake nodes that answer when the test says so.

/** A node object with what `broadcast` reads of one (`label`, `isStalled`); its answers wait in `pending`. */
class FakeNode {
  readonly pending: Done[] = [];
  sent = 0;
  constructor(
    readonly label: string,
    readonly stalled = false,
  ) {}
  isStalled(): boolean {
    return this.stalled;
  }
  /** Answers the oldest command sent to this node. */
  answer(reply: unknown): void {
    this.pending.shift()!(undefined, reply);
  }
  fail(error: unknown): void {
    this.pending.shift()!(error);
  }
}

const fleet = (n: number, stalled: number[] = []) =>
  Array.from({ length: n }, (_, i) => new FakeNode(`node${i}:6379/0`, stalled.includes(i)));
const asNodes = (nodes: FakeNode[]) => nodes as unknown as LockNode[];
const send = (node: LockNode, done: Done) => {
  const fake = node as unknown as FakeNode;
  fake.sent++;
  fake.pending.push(done);
};
/** 'OK' votes yes carrying 7, a number votes yes carrying it, null is busy; anything else is a reply the script never gives. */
const classify = (reply: unknown): Verdict => {
  if (reply === 'OK') return { outcome: 'ok', value: 7 };
  if (typeof reply === 'number') return { outcome: 'ok', value: reply };
  if (reply === null) return { outcome: 'busy' };
  throw new Error(`unexpected ${String(reply)}`);
};
/** Whether `promise` has settled, after the callbacks queued so far have run. */
async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(() => (settled = true));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}
const outcomes = (reports: readonly { outcome: string }[]) => reports.map((r) => r.outcome);
const LONG = 60_000; // a deadline no test reaches: every node answers first (which clears the timer)

describe('broadcast', () => {
  it("until 'quorum': decided as soon as a majority said yes; the others are pending, then filled in by late()", async () => {
    const nodes = fleet(5);
    const round = broadcast({ nodes: asNodes(nodes), send, classify, quorum: 3, timeout: LONG, until: 'quorum' });
    expect(nodes.map((n) => n.sent)).toEqual([1, 1, 1, 1, 1]);
    nodes[4]!.answer(40);
    nodes[0]!.answer(10);
    expect(await isSettled(round)).toBe(false);
    nodes[2]!.answer(30);
    const result = await round;
    expect(result.yes).toEqual([
      { index: 4, value: 40 },
      { index: 0, value: 10 },
      { index: 2, value: 30 },
    ]);
    expect(outcomes(result.reports)).toEqual(['ok', 'pending', 'ok', 'pending', 'ok']);
    expect(result.reports.map((r) => r.node)).toEqual(nodes.map((n) => n.label));
    expect(result.sent).toEqual([true, true, true, true, true]);
    expect(await isSettled(result.settled)).toBe(false);

    nodes[1]!.answer(null);
    nodes[3]!.fail(new Error('READONLY'));
    await result.settled;
    expect(outcomes(result.late())).toEqual(['ok', 'busy', 'ok', 'error', 'ok']);
    // The decision itself does not change: late answers are not votes.
    expect(result.yes).toHaveLength(3);
    expect(outcomes(result.reports)).toEqual(['ok', 'pending', 'ok', 'pending', 'ok']);
  });

  it("until 'quorum': decided as soon as a majority has become impossible", async () => {
    const nodes = fleet(3);
    const round = broadcast({ nodes: asNodes(nodes), send, classify, quorum: 2, timeout: LONG, until: 'quorum' });
    nodes[0]!.answer(null);
    expect(await isSettled(round)).toBe(false);
    nodes[1]!.answer(null);
    const result = await round;
    expect(result.yes).toEqual([]);
    expect(outcomes(result.reports)).toEqual(['busy', 'busy', 'pending']);
    nodes[2]!.answer('OK');
    await result.settled;
  });

  it("until 'all': waits for every node even after a majority said yes", async () => {
    const nodes = fleet(3);
    const round = broadcast({ nodes: asNodes(nodes), send, classify, quorum: 2, timeout: LONG, until: 'all' });
    nodes[0]!.answer('OK');
    nodes[1]!.answer('OK');
    expect(await isSettled(round)).toBe(false);
    nodes[2]!.answer(null);
    const result = await round;
    expect(outcomes(result.reports)).toEqual(['ok', 'ok', 'busy']);
    expect(result.yes.map((y) => y.index)).toEqual([0, 1]);
    expect(await isSettled(result.settled)).toBe(true);
  });

  it('counts a node silent past the timeout as timeout, and its later answer does not change that', async () => {
    const nodes = fleet(3);
    const round = broadcast({ nodes: asNodes(nodes), send, classify, quorum: 2, timeout: 20, until: 'all' });
    nodes[0]!.answer('OK');
    const result = await round; // the deadline decides it
    expect(outcomes(result.reports)).toEqual(['ok', 'timeout', 'timeout']);
    expect(result.yes).toHaveLength(1);
    await result.settled;
    nodes[1]!.answer('OK');
    nodes[2]!.fail(new Error('late'));
    expect(outcomes(result.late())).toEqual(['ok', 'timeout', 'timeout']);
    expect(result.yes).toHaveLength(1);
  });

  it("'live' targets skip a node stalled on earlier commands: a timeout at once, nothing sent", async () => {
    const nodes = fleet(3, [1]);
    const round = broadcast({ nodes: asNodes(nodes), send, classify, quorum: 2, timeout: LONG, until: 'all' });
    expect(nodes.map((n) => n.sent)).toEqual([1, 0, 1]);
    nodes[0]!.answer('OK');
    nodes[2]!.answer('OK');
    const result = await round;
    expect(outcomes(result.reports)).toEqual(['ok', 'timeout', 'ok']);
    expect(result.sent).toEqual([true, false, true]);
  });

  it('given targets: only those nodes get the command, stalled or not; the others count as ok', async () => {
    const nodes = fleet(3, [2]);
    const round = broadcast({
      nodes: asNodes(nodes),
      send,
      classify,
      quorum: 2,
      timeout: LONG,
      until: 'all',
      targets: [false, false, true],
    });
    expect(nodes.map((n) => n.sent)).toEqual([0, 0, 1]);
    nodes[2]!.answer(null);
    const result = await round;
    expect(outcomes(result.reports)).toEqual(['ok', 'ok', 'busy']);
    expect(result.sent).toEqual([false, false, true]);
    expect(result.yes).toEqual([
      { index: 0, value: 0 },
      { index: 1, value: 0 },
    ]);
  });

  it('turns an error answer, a send that throws and a reply the script never gives into error reports', async () => {
    const nodes = fleet(3);
    const throwing = (node: LockNode, done: Done) => {
      if (node.label === nodes[1]!.label) throw new Error('write after end');
      send(node, done);
    };
    const round = broadcast({ nodes: asNodes(nodes), send: throwing, classify, quorum: 2, timeout: LONG, until: 'all' });
    nodes[0]!.fail(new Error('ERR something'));
    nodes[2]!.answer({ weird: true });
    const result = await round;
    expect(result.reports.map((r) => [r.outcome, r.error])).toEqual([
      ['error', 'ERR something'],
      ['error', 'write after end'],
      ['error', 'unexpected reply an object (Object)'],
    ]);
    expect(result.reports.every((r) => typeof r.ms === 'number')).toBe(true);
    expect(result.yes).toEqual([]);
  });
});
