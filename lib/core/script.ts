import { createHash } from 'node:crypto';
import { describeValue } from './log-safe.js';

/**
 * A Lua script, sent by SHA once the node has it (EVALSHA with a NOSCRIPT
 * fallback to EVAL, which also caches it on the node).
 */
export interface Script {
  readonly name: string;
  readonly lua: string;
  readonly sha: string;
}

/**
 * A command's contract in the spirit of redis-semaphore's `createEval<Args,
 * Result>`: how its arguments are laid out in ARGV (sentinels and positions
 * stay here, next to the Lua that reads them), and what its reply means.
 */
export interface Contract<Args, Reply> {
  /** ARGV as strings, made once per call: every node's command shares them. */
  readonly argv: (args: Args) => string[];
  /** The reply decoded; throws on a reply the command never gives. */
  readonly decode: (reply: unknown) => Reply;
}

/** A script with its contract. */
export interface TypedScript<Args, Reply> extends Script, Contract<Args, Reply> {
  /** One call of this script, ready to send to every node. */
  call(keys: readonly string[], args: Args): Call<Reply>;
}

/** One command ready to send to any number of nodes: what runs, on which keys, with which ARGV, and how its reply reads. */
export interface Call<Reply> {
  readonly command: Script | PlainCommand;
  readonly keys: readonly string[];
  readonly argv: readonly string[];
  readonly decode: (reply: unknown) => Reply;
}

/** A command that is not a script (see `SET_NX`). */
export interface PlainCommand {
  readonly name: string;
}

export function defineScript<Args, Reply>(name: string, lua: string, contract: Contract<Args, Reply>): TypedScript<Args, Reply> {
  const script = {
    name,
    lua,
    sha: createHash('sha1').update(lua).digest('hex'),
    argv: contract.argv,
    decode: contract.decode,
    call: (keys: readonly string[], args: Args): Call<Reply> => ({
      command: script,
      keys,
      argv: contract.argv(args),
      decode: contract.decode,
    }),
  };
  return script;
}

/**
 * An integer reply as a number: an application's ioredis client made with
 * `stringNumbers` reads every integer reply as a string of digits (a free
 * resource's "1" was taken for a refusal, and its key left behind).
 */
export function integer(reply: unknown): number {
  return typeof reply === 'string' ? Number(reply) : (reply as number);
}

/** A reply that must be an array of `length` items; anything else is a reply no script gives. */
export function tuple(reply: unknown, length: number): readonly unknown[] {
  if (!Array.isArray(reply) || reply.length !== length) throw new Error(`unexpected reply ${describeValue(reply)}`);
  return reply;
}

/** The part of an ioredis client (standalone or cluster) that runs scripts. */
export interface ScriptRunner {
  evalsha(sha: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
  eval(lua: string, numKeys: number, ...keysAndArgs: (string | number)[]): Promise<unknown>;
}

/** Called once with a command's reply, or with its error. */
export type Done = (error: unknown, reply?: unknown) => void;

/**
 * Runs a script by SHA; on NOSCRIPT (a restarted or flushed node) sends it once
 * with EVAL, which caches it. Callback style: the lock's hot path makes no
 * promise of its own per command.
 */
export function sendScript(
  client: ScriptRunner,
  script: Script,
  keys: readonly string[],
  args: readonly (string | number)[],
  done: Done,
  /**
   * `performance.now()` after which the NOSCRIPT fallback is not sent: by then
   * the caller has counted this node as timed out and may have sent the undo,
   * which a late EVAL would overtake (leaving a key nobody holds).
   */
  fallbackUntil = Infinity,
): void {
  client.evalsha(script.sha, keys.length, ...keys, ...args).then(
    (reply) => done(undefined, reply),
    (error: unknown) => scriptFailed(error, client, script, keys, args, done, fallbackUntil),
  );
}

/**
 * EVALSHA of `sendScript` failed with `error`: on NOSCRIPT the script is sent
 * once with EVAL (before `fallbackUntil`), which caches it; any other error is
 * the answer. For adapters that send the EVALSHA their own way.
 */
export function scriptFailed(
  error: unknown,
  client: Pick<ScriptRunner, 'eval'>,
  script: Script,
  keys: readonly string[],
  args: readonly (string | number)[],
  done: Done,
  fallbackUntil: number,
): void {
  const failed = (error: unknown) => done(error ?? new Error(`${script.name} failed`));
  if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) return failed(error);
  if (performance.now() > fallbackUntil) return failed(new NoscriptTooLateError(error.message));
  client.eval(script.lua, keys.length, ...keys, ...args).then((reply) => done(undefined, reply), failed);
}

/**
 * A NOSCRIPT that came back after the caller's node timeout, so no EVAL went
 * with it: the node lacks the script still, and its node loads it again (see
 * `LockNode.send`), or it would answer NOSCRIPT to every call while it stays
 * slower than the timeout, and late again the moment it is not.
 */
export class NoscriptTooLateError extends Error {
  constructor(message: string) {
    super(`${message} (answered too late to send the script)`);
  }
}

/** `sendScript` as a promise: the one promise adapter, for paths off the lock's hot path. */
export function runScript(
  client: ScriptRunner,
  script: Script,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  return new Promise((resolve, reject) =>
    sendScript(client, script, keys, args, (error, reply) => (error === undefined ? resolve(reply) : reject(error))),
  );
}
