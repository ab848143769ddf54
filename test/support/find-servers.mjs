// Which Redis servers the tests run on, decided once before any test starts
// (test/support/global-setup.mjs) and again, the same way, by each jest worker
// (redis-fleet.ts, which the global setup's choice pins through
// REDLOCK_TEST_CONTAINERS).
//
//   REDLOCK_TEST_CONTAINERS=0  local binary only
//   REDLOCK_TEST_CONTAINERS=1  a container engine if one answers, else the local binary
//   unset                      the local binary (REDLOCK_TEST_SERVER, default redis-server)
//                              when it is on PATH, else a container engine if one answers
//
// The local binary comes first when both are there: it starts in milliseconds,
// and the fault tests signal its processes by PID. With neither, findServers
// rejects with a NoServerError whose message is one line saying what to install.
import { findOnPath, installHint, serverBinary } from '../../scripts/redis-server.mjs';

export class NoServerError extends Error {
  name = 'NoServerError';
}

let runtimeProbe;

/**
 * Whether a container engine answers, checked once per process. With none,
 * testcontainers fails within milliseconds; the 3 s cap guards against a
 * socket that hangs.
 */
export function containerRuntimeAvailable() {
  runtimeProbe ??= (async () => {
    let timer;
    try {
      const tc = await import('testcontainers');
      return await Promise.race([
        tc.getContainerRuntimeClient().then(
          () => true,
          () => false,
        ),
        new Promise((resolve) => {
          timer = setTimeout(() => resolve(false), 3000);
          timer.unref();
        }),
      ]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  })();
  return runtimeProbe;
}

/** `{ backend: 'local' | 'container', binary?, note? }`; rejects with NoServerError when there is nothing to run on. */
export async function findServers(env = process.env) {
  const mode = env.REDLOCK_TEST_CONTAINERS;
  const bin = serverBinary(env);
  const binary = findOnPath(bin, env);
  const named = env.REDLOCK_TEST_SERVER ? `${bin} (REDLOCK_TEST_SERVER)` : bin;
  const none = (why) =>
    new NoServerError(
      `The tests need Redis: ${why}. To run them, ${installHint()}, or set REDLOCK_TEST_SERVER to a server binary, or start Docker or Podman.`,
    );

  if (mode === '0' || mode === 'false') {
    if (binary) return { backend: 'local', binary };
    throw none(`${named} is not on PATH (and REDLOCK_TEST_CONTAINERS=${mode} rules out containers)`);
  }
  if (mode === '1' || mode === 'true') {
    if (await containerRuntimeAvailable()) return { backend: 'container' };
    if (binary) {
      return { backend: 'local', binary, note: `REDLOCK_TEST_CONTAINERS=${mode} but no container engine answers; using ${binary}` };
    }
    throw none(`REDLOCK_TEST_CONTAINERS=${mode} but no container engine answers, and ${named} is not on PATH`);
  }
  if (binary) return { backend: 'local', binary };
  if (await containerRuntimeAvailable()) return { backend: 'container' };
  throw none(`${named} is not on PATH and no container engine answers`);
}
