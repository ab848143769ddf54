// Local redis-server nodes for the benchmarks: free loopback ports, no persistence,
// each tied to this process (it goes when the process ends, however it ends).
import { spawn } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** One PING over a raw socket: true on +PONG within 200 ms. */
function ping(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 200);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d) => done(String(d).startsWith('+PONG')));
    socket.on('error', () => done(false));
  });
}

/**
 * A redis-server on a loopback port, inside an `sh` wrapper that kills it when
 * its stdin closes: when this process ends, however it ends, the server goes too.
 */
export async function startNode(port) {
  port ??= await freePort();
  const wrapper = spawn(
    'sh',
    ['-c', `redis-server --port ${port} --bind 127.0.0.1 --save "" --appendonly no >/dev/null & echo $!; cat >/dev/null; kill -CONT $! 2>/dev/null; kill -9 $! 2>/dev/null; wait`],
    { stdio: ['pipe', 'pipe', 'ignore'] },
  );
  const exited = new Promise((resolve) => wrapper.once('exit', resolve));
  const pid = Number(await new Promise((resolve) => wrapper.stdout.once('data', (d) => resolve(String(d).trim()))));
  for (let i = 0; !(await ping(port)); i++) {
    if (i > 300) throw new Error(`redis-server on port ${port} did not start`);
    await sleep(10);
  }
  return { port, url: `redis://127.0.0.1:${port}`, pid, stop: () => wrapper.stdin.end(), exited };
}
export const signal = (node, sig) => {
  try {
    process.kill(node.pid, sig);
  } catch {}
};

