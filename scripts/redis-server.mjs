// The Redis server binary the sample launcher and the test harness look for, and
// the one line that tells someone without it what to install.
//
// Plain JavaScript so that `npm run sample` (before anything is compiled) and the
// jest global setup (loaded outside jest's module mapping) can both import it.
import { accessSync, constants, readFileSync } from 'node:fs';
import path from 'node:path';

export { serverBinary } from './redis-spawner.mjs';

/** The executable file `bin` names (a path, or a name looked up on PATH), or undefined. */
export function findOnPath(bin, env = process.env) {
  const candidates = bin.includes('/')
    ? [bin]
    : (env.PATH ?? '')
        .split(path.delimiter)
        .filter(Boolean)
        .map((dir) => path.join(dir, bin));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      /* next */
    }
  }
  return undefined;
}

function osRelease() {
  try {
    const text = readFileSync('/etc/os-release', 'utf8');
    const field = (name) => new RegExp(`^${name}="?([^"\\n]*)"?$`, 'm').exec(text)?.[1] ?? '';
    return `${field('ID')} ${field('ID_LIKE')}`.split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * How to install redis-server here: `{ system, command }`, or undefined when this
 * platform has no package we know of. `sudo` is left out for root.
 */
export function installCommand(platform = process.platform) {
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  if (platform === 'darwin') return { system: 'macOS, Homebrew', command: 'brew install redis' };
  if (platform !== 'linux') return undefined;
  const ids = osRelease();
  if (ids.some((id) => id === 'debian' || id === 'ubuntu')) {
    return { system: 'Debian/Ubuntu', command: `${sudo}apt-get install -y redis-server` };
  }
  if (ids.some((id) => id === 'fedora' || id === 'rhel' || id === 'centos')) {
    return { system: 'Fedora/RHEL', command: `${sudo}dnf install -y redis` };
  }
  if (ids.includes('alpine')) return { system: 'Alpine', command: `${sudo}apk add redis` };
  return undefined;
}

/** "install redis-server 6.2 or later (Debian/Ubuntu: `sudo apt-get install -y redis-server`)" */
export function installHint() {
  const how = installCommand();
  return `install redis-server 6.2 or later (${how ? `${how.system}: \`${how.command}\`` : 'from your package manager or https://redis.io/downloads'})`;
}
