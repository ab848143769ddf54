import { parseArgs } from 'node:util';
import { InvalidArgumentError, QuorumUnreachableError, Redlock } from '../core/index.js';
import { inspectCommand } from './inspect.command.js';
import { listCommand } from './list.command.js';
import { releaseCommand } from './release.command.js';

export const USAGE = `Usage:
  nest-redlock inspect <resource>          --nodes <url,url,...> [--prefix redlock:] [--json]
  nest-redlock list [pattern]              --nodes <url,url,...> [--prefix redlock:] [--limit 100] [--json]
  nest-redlock release --force <resource>  --nodes <url,url,...> [--prefix redlock:] [--holder <fingerprint>] [--json]

inspect  says whether <resource> is held, on which nodes, for how long and by whom (every holder of a
         semaphore or read-write lock, with its mode).
list     lists the locks, semaphores and read-write locks whose resource matches [pattern] (a Redis glob,
         default *), found with SCAN.
release  evicts the holder of <resource> and raises its fencing counter; with --holder, only that holder.
         A semaphore or read-write lock loses one permit: --holder names it when there are several.
Node URLs may carry credentials (redis://:password@host:6379); they are never printed.
Exit codes: 0 done, 1 too few nodes answered, 2 usage, 3 another holder has the resource (release --holder).`;

/** What a subcommand gets: its positional arguments, the parsed options, a client and where to print. */
export interface CommandRun {
  readonly args: readonly string[];
  readonly values: { readonly json?: boolean; readonly limit?: string; readonly holder?: string; readonly force?: boolean };
  readonly redlock: Redlock;
  readonly print: (line: string) => void;
}

const COMMANDS: Record<string, { arity: number; run: (run: CommandRun) => Promise<number> }> = {
  inspect: { arity: 1, run: inspectCommand },
  list: { arity: 0, run: listCommand },
  release: { arity: 1, run: releaseCommand },
};

/** The `nest-redlock` command line; returns the exit code (see USAGE). */
export async function main(argv: readonly string[], print: (line: string) => void): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        nodes: { type: 'string' },
        prefix: { type: 'string' },
        json: { type: 'boolean' },
        limit: { type: 'string' },
        holder: { type: 'string' },
        force: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    print(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const [name, ...args] = parsed.positionals;
  const command = name === undefined ? undefined : COMMANDS[name];
  if (parsed.values.help || !command || args.length < command.arity || !parsed.values.nodes) {
    print(USAGE);
    return parsed.values.help ? 0 : 2;
  }
  if (name === 'release' && !parsed.values.force) {
    print(`release needs --force: it evicts whoever holds the lock, whose work may still be running.\n\n${USAGE}`);
    return 2;
  }
  // 'url, url' (a list copied with its spaces) as well as 'url,url'.
  const nodes = parsed.values.nodes
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  let redlock: Redlock | undefined;
  try {
    // An operator's command is not on a latency budget: a node busy for a moment still answers.
    redlock = new Redlock({ nodes, prefix: parsed.values.prefix, retryCount: 0, nodeTimeout: 1000 });
    // The commands wait for the connections themselves (at most a moment for a hung node).
    return await command.run({ args, values: parsed.values, redlock, print });
  } catch (error) {
    if (!(error instanceof InvalidArgumentError) && !(error instanceof QuorumUnreachableError)) throw error;
    print(error instanceof InvalidArgumentError ? `${error.message}\n\n${USAGE}` : error.message);
    return error instanceof InvalidArgumentError ? 2 : 1;
  } finally {
    await redlock?.close();
  }
}
