// Statistics over rounds, the tables and progress lines the run prints, and the
// standalone scripts' `--name=value` arguments.
const started = performance.now();

/** Seconds since the run started, as the progress lines and the final line show them. */
export const elapsedSeconds = () => (performance.now() - started) / 1000;

/** The value of the command line's `--name=value`, or `fallback`. */
export const option = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;

/** The `p` quantile (0 to 1) of an ascending array, as the nearest rank below. */
export const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

export const median = (xs) => {
  const s = xs.filter((x) => typeof x === 'number' && !Number.isNaN(x)).sort((a, b) => a - b);
  if (!s.length) return undefined;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
export const shuffle = (xs) =>
  xs
    .map((x) => [Math.random(), x])
    .sort((a, b) => a[0] - b[0])
    .map((x) => x[1]);
export const fmt = (x, digits = 0) => (x === undefined || x === null || Number.isNaN(x) ? '-' : x.toFixed(digits));
export const ratio = (x, base) => (x === undefined || !base ? '-' : `${(x / base).toFixed(2)}x`);

export function table(title, head, rows, notes = []) {
  const all = [head, ...rows].map((r) => r.map((c) => String(c ?? '')));
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  console.log(`\n### ${title}\n\n${line(all[0])}\n${line(widths.map((w) => '-'.repeat(w)))}\n${all.slice(1).map(line).join('\n')}`);
  if (notes.length) console.log(`\n${notes.join('\n')}`);
}
export const log = (s) => process.stderr.write(`[bench ${elapsedSeconds().toFixed(0).padStart(3)} s] ${s}\n`);
