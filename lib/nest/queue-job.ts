import type { ResolvedBusy } from './busy.js';
import type { LockedMetadata } from './locked.metadata.js';

/** `@nestjs/bullmq`'s `@Processor()` records its settings on the class under this key. */
const PROCESSOR_METADATA = 'bullmq:processor_metadata';

/**
 * What `@Locked` uses of a BullMQ `Job` (structural: bullmq is an optional
 * peer, never imported). Keys may read `{job.name}`, `{job.id}`, `{job.data.x}`.
 */
export interface QueueJob {
  readonly id?: string;
  readonly name: string;
  readonly data: any;
  /** Counted by BullMQ: every start of the job, and the attempts that failed; the other starts were busy (the back-off doubles per start). */
  readonly attemptsStarted?: number;
  readonly attemptsMade?: number;
  readonly token?: string;
  moveToDelayed(timestamp: number, token?: string): Promise<void>;
}

/** The job (and the worker's token for it) when this call is a `@Processor` class's `process(job, token)`. */
export function queueJobOf(
  metadata: LockedMetadata,
  self: object,
  args: unknown[],
): { job: QueueJob; token: string | undefined } | undefined {
  if (metadata.propertyKey !== 'process' || !Reflect.hasMetadata(PROCESSOR_METADATA, self.constructor)) return undefined;
  const job = args[0] as Partial<QueueJob> | undefined;
  if (!job || typeof job !== 'object' || typeof job.moveToDelayed !== 'function') return undefined;
  return { job: job as QueueJob, token: typeof args[1] === 'string' ? args[1] : job.token };
}

/**
 * Thrown from `process()` after the job was moved back to the delayed set:
 * BullMQ's worker recognises it by its name (`DelayedError`), so the job is
 * neither completed nor failed, and no attempt is counted.
 */
export class JobPostponedError extends Error {
  override readonly name = 'DelayedError';
}

/**
 * The delay of a busy job's next run: the first delay, doubled for each
 * earlier start of the job that was not a failed attempt (BullMQ resets a
 * promoted job's own `delay`, so the starts it counts carry the back-off
 * across workers), at most `maxDelay`.
 */
export function busyDelay(job: QueueJob, busy: ResolvedBusy): number {
  const earlier = Math.max(0, (job.attemptsStarted ?? 1) - (job.attemptsMade ?? 0) - 1);
  return Math.min(busy.maxDelay, busy.delay * 2 ** Math.min(earlier, 30));
}

/** Moves a busy job back to the delayed set; the rejection tells the worker it was moved. */
export async function postpone(job: QueueJob, token: string | undefined, busy: ResolvedBusy): Promise<never> {
  const delay = busyDelay(job, busy);
  await job.moveToDelayed(Date.now() + delay, token);
  throw new JobPostponedError(
    `Job ${job.id ?? ''} (${job.name}) postponed by ${delay} ms: its lock could not be taken (busy, too few nodes, or shutting down)`,
  );
}
