// 4 and 5. Degraded: nodes killed or paused once the worker is connected and warm.
import { P } from '../settings.mjs';
import { latency, latencyTable } from './latency.mjs';

/** The worker's parameters: cycles under a deadline each, after a healthy baseline. */
const params = () => ({ cycles: P.dCycles, deadline: P.dDeadline, limit: 60_000, baseline: true });

/** One node of five killed (kill -9) once the worker is connected and warm; restarted, empty, on the same port after. */
export async function oneDown({ results, nodes, urls5, libs }) {
  const DLIBS = libs.degraded;
  const degraded = params();
  latencyTable(
    `One of 5 nodes down (killed after the clients connected; ${P.dRounds} round(s) x ${P.dCycles} cycles)`,
    await latency(results, 'oneDown', urls5, DLIBS, degraded, P.dRounds, () => {
      let down = false;
      return {
        ready: async () => {
          await nodes[4].kill();
          down = true;
        },
        result: async () => {
          if (!down) return;
          down = false;
          await nodes[4].restart();
        },
      };
    }),
    ["p50 / healthy: over the same process's p50 on all 5 nodes just before the kill (median over rounds)."],
  );
}

/** Two nodes of five paused (SIGSTOP) once the worker is connected and warm, resumed after. */
export async function twoPaused({ results, nodes, urls5, libs }) {
  const DLIBS = libs.degraded;
  const degraded = params();
  const paused = [nodes[3], nodes[4]];
  latencyTable(
    `Two of 5 nodes paused (SIGSTOP after the clients connected; ${P.dRounds} round(s) x ${P.dCycles} cycles; each operation bounded by ${P.dDeadline / 1000} s)`,
    await latency(results, 'twoPaused', urls5, DLIBS, degraded, P.dRounds, () => ({
      ready: async () => void (await Promise.all(paused.map((n) => n.pause()))),
      result: () => Promise.all(paused.map((n) => n.resume())),
    })),
    [
      '"timeout": 3 acquire or release calls did not finish within the deadline (the library waits for every node).',
      "p50 / healthy: over the same process's p50 on all 5 nodes just before the pause (median over rounds).",
    ],
  );
}
