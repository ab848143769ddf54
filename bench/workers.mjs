// The worker processes (worker.mjs): one measurement each, one library, one scenario.
import { fork } from 'node:child_process';

const children = new Set();
let snapshot; // file URL of the copy's core/index.js, which the workers import

/** Where the workers import nest-redlock from: the file URL of a copy of dist/esm's core/index.js. */
export function useBuild(url) {
  snapshot = url;
}

/** SIGKILLs every worker still running. */
export function killWorkers() {
  for (const child of children) child.kill('SIGKILL');
}

/**
 * Runs one worker to its end. `hooks.ready()` runs when the worker is warm, and
 * returns what goes in its go message; `hooks.result(child)` runs as soon as its
 * result arrives (or, with no child, when it exited without one); `hooks.message(m,
 * child)` gets its other messages. Never rejects: a failure resolves to `{ error }`.
 */
export function runWorker(adapter, urls, scenario, params, hooks = {}) {
  return new Promise((resolve) => {
    const child = fork(new URL('./worker.mjs', import.meta.url).pathname, [JSON.stringify({ adapter, urls, scenario, params })], {
      execArgv: ['--expose-gc', ...(process.env.BENCH_WORKER_ARGS?.split(' ') ?? [])],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      env: { ...process.env, BENCH_NEST_REDLOCK: snapshot },
    });
    children.add(child);
    let result;
    let err = '';
    let wasReady = false;
    let afterResult;
    child.stderr.on('data', (d) => (err += d));
    const limit = setTimeout(() => {
      err ||= `killed after ${params.limit ?? 120_000} ms`;
      child.kill('SIGKILL');
    }, params.limit ?? 120_000);
    child.on('message', async (m) => {
      if (m.type === 'ready') {
        wasReady = true;
        const go = (await hooks.ready?.()) ?? {};
        if (child.connected) child.send({ type: 'go', ...go });
      } else if (m.type === 'result') {
        result = m.result;
        afterResult = hooks.result?.(child);
      } else {
        hooks.message?.(m, child);
      }
    });
    child.on('exit', async () => {
      clearTimeout(limit);
      children.delete(child);
      if (!wasReady) await hooks.failed?.();
      await (result ? afterResult : hooks.result?.());
      const error = err.split('\n').find((l) => /Error|error/.test(l)) ?? err.split('\n')[0];
      resolve(result ?? { error: error?.trim().slice(0, 200) || 'no result' });
    });
  });
}
