// The V8 CPU profiler around a measured window (cycle-cpu.mjs, permit-cpu.mjs): started
// after the warm-up, written to bench/results/profiles/ for DevTools or
// `node bench/profile-summary.mjs <file>`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/** Starts profiling this process, sampling every `interval` µs. */
export async function startProfile(interval) {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval });
  await session.post('Profiler.start');
  return session;
}

/** Stops it and writes `<name>-<time>.cpuprofile`, printing the path. */
export async function writeProfile(session, name) {
  const { profile } = await session.post('Profiler.stop');
  const dir = new URL('./results/profiles/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  const file = new URL(`./${name.replace(/\W+/g, '-')}-${Date.now()}.cpuprofile`, dir);
  writeFileSync(file, JSON.stringify(profile));
  console.log(`profile: ${file.pathname}`);
}
