// The machine and the library versions a run measured, for its header and its results file.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { serverBinary } from '../scripts/redis-spawner.mjs';
import { ioredisCopies } from './adapters/index.mjs';

const bench = new URL('./', import.meta.url);

export function machine() {
  const model =
    readFileSync('/proc/cpuinfo', 'utf8')
      .match(/model name\s*:\s*(.*)/)?.[1]
      ?.trim() ?? 'unknown cpu';
  const redis = execFileSync(serverBinary(), ['--version'])
    .toString()
    .match(/v=(\S+)/)?.[1];
  return `${model}, ${cpus().length} cores, Node ${process.version}, redis-server ${redis}`;
}

export function versions() {
  const version = (name) => {
    try {
      return JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, bench), 'utf8')).version;
    } catch {
      return 'not installed';
    }
  };
  const own = JSON.parse(readFileSync(new URL('../package.json', bench), 'utf8')).version;
  return [
    `nest-redlock ${own} (this checkout's dist/esm)`,
    `node-redlock ${version('redlock5')} and ${version('redlock4')}`,
    `@sesamecare-oss/redlock ${version('@sesamecare-oss/redlock')}`,
    `redlock-universal ${version('redlock-universal')}`,
    `redis-semaphore ${version('redis-semaphore')}`,
    `ioredis ${version('ioredis')} (all libraries)`,
  ].join(', ');
}

/** Which ioredis copy (file and version) each client setup really uses. */
export function ioredisSetups() {
  const copies = ioredisCopies();
  const at = (file) => {
    const dir = file.replace(/\/built\/index\.js$/, '');
    const { version } = JSON.parse(readFileSync(`${dir}/package.json`, 'utf8'));
    return `${dir} (${version})`;
  };
  return {
    peers: at(copies.bench),
    library: at(copies.library),
    same: at(copies.same),
    other: copies.other === copies.same ? undefined : at(copies.other),
  };
}
