import { describeValue } from './log-safe.js';
import type { LockNode } from './node.js';
import type { Call, Done } from './script.js';
import type { NodeOutcome, NodeReport } from './outcome.js';
import { packedFill, packedMap } from './packed.js';

/** How a reply from one node counts, and the value it carried (a fencing counter). */
export interface Verdict {
  readonly outcome: NodeOutcome;
  readonly value?: number;
}

export interface RoundResult {
  /** Nodes that voted yes (`ok`), with the value each carried, in answer order. */
  readonly yes: readonly { readonly index: number; readonly value: number }[];
  /** One report per node, in node order, as things stood when the round was decided. */
  readonly reports: readonly NodeReport[];
  /** Milliseconds from the first send to the decision. */
  readonly elapsed: number;
  /**
   * The reports again, with the answers of nodes that were `pending` at an early
   * decision: read after a later round on the same nodes (which waited up to
   * `timeout`), it tells what they said; those still silent count as `timeout`.
   */
  readonly late: () => readonly NodeReport[];
  /**
   * Settles when every node has answered, or `timeout` ms after the round began
   * (the silent ones then count as `timeout` in `late()`). Never rejects.
   */
  readonly settled: Promise<void>;
  /** Which nodes the command was sent to. */
  readonly sent: readonly boolean[];
  /**
   * How many nodes it was sent to have not said yes (refused, failed, or not
   * answered yet; an answer past the deadline stays uncounted), kept up to date
   * as answers come after the decision. A small object of its own: whoever
   * keeps it for later keeps none of the round.
   */
  readonly unconfirmed: { readonly count: number };
}

/**
 * Who gets the command: `'live'`, every node except those hung on earlier
 * commands (they count as a timeout at once); or exactly the nodes marked
 * true, hung or not, the others counting as `ok` (nothing to do there). An
 * undo or release goes to the nodes its acquire went to: queued behind it on
 * a hung node, it deletes the key that acquire will set when the node resumes.
 */
export type Targets = 'live' | readonly boolean[];

/** The nodes of a client and the votes a decision needs. */
export interface NodeSet {
  readonly nodes: readonly LockNode[];
  readonly quorum: number;
}

/** What `broadcast` reads of a node. */
export type RoundNode = Pick<LockNode, 'label' | 'isStalled'>;

/** One round: what to send to which nodes, how to count the answers, and when to decide. */
export interface RoundOptions<N extends RoundNode> {
  readonly nodes: readonly N[];
  /** Sends the command to one node; `done` is called once with its reply or error. */
  readonly send: (node: N, done: Done) => void;
  /** How a reply counts; throwing marks a reply the command never gives (an `error` report). */
  readonly classify: (reply: unknown, node: N) => Verdict;
  /** Yes votes that decide the round (with `until: 'quorum'`). */
  readonly quorum: number;
  /** Ms after which a silent node counts as `timeout`. */
  readonly timeout: number;
  readonly until: 'quorum' | 'all';
  /** Default `'live'`. */
  readonly targets?: Targets;
}

/**
 * Sends one command to every node at once and decides as soon as the outcome
 * is known: with `until: 'quorum'`, when `quorum` nodes said yes or when that
 * has become impossible; with `until: 'all'`, when every node answered. Nodes
 * still silent after `timeout` ms count as `timeout`; a node whose oldest
 * unanswered command is older than `timeout` is not sent to at all. One timer
 * serves the whole round.
 * Late answers are absorbed: no rejection escapes.
 */
export function broadcast<N extends RoundNode>(round: RoundOptions<N>): Promise<RoundResult> {
  return new Promise<RoundResult>((resolve) => {
    const tally = new Tally(round, resolve);
    round.nodes.forEach((node, index) => tally.dispatch(node, index));
  });
}

/** The state of one `broadcast`: who was sent what, who answered how, and whether it is decided. */
class Tally<N extends RoundNode> {
  private readonly started = performance.now();
  private readonly outcomes: (NodeReport | undefined)[];
  private readonly yes: { index: number; value: number }[] = [];
  private readonly sent: boolean[];
  private readonly unconfirmed = { count: 0 };
  private answered = 0;
  private no = 0;
  /** Nodes not heard from yet. */
  private silent: number;
  private decided = false;
  private timedOut = false;
  /** Every node answered, or the timer fired: `settled` resolves. */
  private over = false;
  // `settled` is awaited only by the undo of a failed attempt: its promise is made
  // when first asked for, not in every round.
  private settledPromise: Promise<void> | undefined;
  private onSettled: (() => void) | undefined;
  /** The one timer of the round: the deadline of the decision, and of `settled`. */
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly round: RoundOptions<N>,
    private readonly resolve: (result: RoundResult) => void,
  ) {
    const n = round.nodes.length;
    this.outcomes = packedFill(n, undefined);
    this.sent = packedFill(n, false);
    this.silent = n;
    // The deadline is checked once more after the loop's poll phase: when this
    // process was stalled (a GC pause, a long synchronous handler, a loaded
    // host), timers run before the replies that arrived meanwhile are read, and
    // a node that answered in time would count as timed out. The timeout
    // measures the node, not this process; validity still counts every ms.
    this.timer = setTimeout(
      () =>
        setImmediate(() => {
          if (this.over) return;
          this.timedOut = true;
          if (!this.decided) this.decide(true);
          this.finish();
        }),
      round.timeout,
    );
  }

  private finish(): void {
    this.over = true;
    this.onSettled?.();
  }

  whenSettled(): Promise<void> {
    if (this.over) return Promise.resolve();
    return (this.settledPromise ??= new Promise<void>((resolve) => (this.onSettled = resolve)));
  }

  /** Sends the command to one node, or counts it at once (not a target, or hung on earlier commands). */
  dispatch(node: N, index: number): void {
    const { targets = 'live', timeout, send } = this.round;
    if (targets !== 'live' && !targets[index]) {
      this.record(index, { node: node.label, outcome: 'ok' }); // the command it would undo never went there
      return;
    }
    if (targets === 'live' && node.isStalled(timeout)) {
      // Still hung on earlier commands: a timeout now, without adding to its backlog.
      this.record(index, { node: node.label, outcome: 'timeout' });
      return;
    }
    this.sent[index] = true;
    this.unconfirmed.count++;
    const done: Done = (error, reply) => this.answer(node, index, error, reply);
    try {
      send(node, done);
    } catch (error) {
      done(error ?? new Error('send failed'));
    }
  }

  private answer(node: N, index: number, error: unknown, reply: unknown): void {
    const ms = performance.now() - this.started;
    if (error !== undefined) {
      this.record(index, {
        node: node.label,
        outcome: 'error',
        ms,
        error: withoutArguments(error instanceof Error ? error.message : String(error)),
      });
      return;
    }
    let verdict: Verdict;
    try {
      verdict = this.round.classify(reply, node);
    } catch {
      // Not a reply this script gives: never let it escape as an uncaught error.
      this.record(index, { node: node.label, outcome: 'error', ms, error: `unexpected reply ${describeValue(reply)}` });
      return;
    }
    this.record(index, { node: node.label, outcome: verdict.outcome, ms }, verdict.value);
  }

  private record(index: number, report: NodeReport, value?: number): void {
    // An answer after the deadline stays a timeout; one after an early decision fills in `pending`.
    if (this.timedOut) return;
    this.outcomes[index] = report;
    if (report.outcome === 'ok' && this.sent[index]) this.unconfirmed.count--;
    if (--this.silent === 0) {
      clearTimeout(this.timer);
      this.finish();
    }
    if (this.decided) return;
    const { nodes, until, quorum } = this.round;
    const n = nodes.length;
    this.answered++;
    if (report.outcome === 'ok') this.yes.push({ index, value: value ?? 0 });
    else this.no++;
    if (this.answered === n) this.decide(false);
    else if (until === 'quorum' && (this.yes.length >= quorum || this.no > n - quorum)) this.decide(false);
  }

  private decide(byTimer: boolean): void {
    this.decided = true;
    const snapshot = (missing: NodeOutcome) => () =>
      packedMap(this.round.nodes, (node, i): NodeReport => this.outcomes[i] ?? { node: node.label, outcome: missing });
    this.resolve(
      new Decided(
        this.yes,
        snapshot(byTimer ? 'timeout' : 'pending')(),
        performance.now() - this.started,
        snapshot('timeout'),
        this.sent,
        this.unconfirmed,
        this,
      ),
    );
  }
}

/** A decided round; its `settled` promise is made only if asked for. */
class Decided implements RoundResult {
  constructor(
    readonly yes: RoundResult['yes'],
    readonly reports: readonly NodeReport[],
    readonly elapsed: number,
    readonly late: () => readonly NodeReport[],
    readonly sent: readonly boolean[],
    readonly unconfirmed: { readonly count: number },
    private readonly tally: { whenSettled(): Promise<void> },
  ) {}

  get settled(): Promise<void> {
    return this.tally.whenSettled();
  }
}

/** A round of one call, sent to every node: each reply decoded by the call, then counted by `verdict`. */
export function callRound<R>(
  call: Call<R>,
  verdict: (reply: R, node: LockNode) => Verdict,
  round: Omit<RoundOptions<LockNode>, 'send' | 'classify'> & {
    /** Ms after which a NOSCRIPT answer gets no EVAL (see `sendScript`); default: always sent. */
    readonly fallbackWithin?: number;
  },
): Promise<RoundResult> {
  // Every field named rather than spread: a spread object on the hot path costs microseconds (see acquire-plan.ts).
  return broadcast({
    nodes: round.nodes,
    quorum: round.quorum,
    timeout: round.timeout,
    until: round.until,
    targets: round.targets,
    send: (node, done) => node.send(call, done, round.fallbackWithin),
    classify: (reply, node) => verdict(call.decode(reply), node),
  });
}

/**
 * A node's error without the command's arguments: Redis 6.2 and later answer
 * an unknown command (EVALSHA renamed or disabled, as managed servers do) with
 * "ERR unknown command 'evalsha', with args beginning with: ...", up to 128
 * bytes of them: the lock's value among them, which no message may show.
 */
function withoutArguments(message: string): string {
  const at = message.indexOf(', with args beginning with:');
  return at < 0 ? message : message.slice(0, at);
}
