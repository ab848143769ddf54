import { parseArgs } from 'node:util';
import { type ResourceInspection, Redlock } from '../core/index.js';

const USAGE = `Usage: nest-redlock inspect <resource> --nodes <url,url,...> [--prefix redlock:] [--json]

Says whether <resource> is held, on which nodes, for how long and by whom.
Node URLs may carry credentials (redis://:password@host:6379); they are never printed.`;

/** The `nest-redlock` command line; returns the exit code (0 ok, 1 nodes unreachable, 2 usage). */
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
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    print(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const [command, resource] = parsed.positionals;
  if (parsed.values.help || command !== 'inspect' || !resource || !parsed.values.nodes) {
    print(USAGE);
    return parsed.values.help ? 0 : 2;
  }
  const redlock = new Redlock({
    nodes: parsed.values.nodes.split(',').filter(Boolean),
    prefix: parsed.values.prefix,
    retryCount: 0,
  });
  try {
    await redlock.ready();
    const inspection = await redlock.inspect(resource);
    print(parsed.values.json ? JSON.stringify(inspection, null, 2) : render(inspection));
    const answered = inspection.nodes.filter((n) => n.state === 'held' || n.state === 'free').length;
    return answered >= inspection.quorum ? 0 : 1;
  } finally {
    await redlock.close();
  }
}

function render(i: ResourceInspection): string {
  const who = i.identity ? ` by ${[i.identity.app, i.identity.host, i.identity.pid].filter((x) => x !== undefined).join(' / ')}` : '';
  const head = i.held
    ? `${JSON.stringify(i.resource)} is HELD${who} (holder ${i.holder}) on ${i.heldOn}/${i.nodes.length} nodes (quorum ${i.quorum}), ${i.ttl} ms left`
    : `${JSON.stringify(i.resource)} is not held by a quorum (${i.heldOn}/${i.nodes.length} nodes have one holder's key, quorum ${i.quorum})`;
  const rows = i.nodes.map(
    (n) =>
      `  ${n.node.padEnd(24)} ${n.state.padEnd(8)} ${n.ttl !== undefined ? `${n.ttl} ms`.padEnd(10) : ''.padEnd(10)} ${n.holder ?? ''}${n.error ? ` ${n.error}` : ''}`,
  );
  const tail = `fencing counter: ${i.fencingCounter ?? '-'}; waiters: ${i.waiters}`;
  return [head, ...rows, tail].join('\n');
}
