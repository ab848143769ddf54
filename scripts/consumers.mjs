// `node scripts/consumers.mjs [name...]`: the packed package, as consumers get it.
//
// 1. `npm run build`, then `npm pack --dry-run --json`: fails if the package would
//    ship anything outside dist/esm, dist/cjs, README.md, package.json, LICENSE
//    (or a test, a TypeScript source), or if an `exports` target (types included)
//    is not in it.
// 2. `npm pack` into a temp dir; for each app under consumers/ (or the names
//    given): copy it to the temp dir, `npm install` its dependencies plus the
//    tarball (not a path link; `npm install`, not `npm ci`, see .ci/run), with
//    scripts/redis-spawner.mjs copied in as its test/redis-spawner.js,
//    load it with plain node (the right build; the package's ioredis loaded only
//    for a node given as a URL, never over nodes the app passes), type-check it
//    (and check which .d.ts of the package TypeScript picked: dist/esm for a
//    "type": "module" app, dist/cjs otherwise), run its `npm test`
//    (jest: a locked endpoint and a locked cron job against its own redis-server).
// Prints each step's time and each consumer's jest summary; exits 1 if anything
// failed. Consumers run concurrently (CONSUMERS_SERIAL=1 runs them one by one).
// The temp dir is removed on success and kept (path printed) on failure, or
// always with KEEP_CONSUMERS_TMP=1.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CONSUMERS = path.join(ROOT, 'consumers');
const ALLOWED = [/^dist\/esm\//, /^dist\/cjs\//, /^README\.md$/, /^package\.json$/, /^LICEN[CS]E(\.(md|txt))?$/];
const NOT_SHIPPED = [
  [/(^|\/)(test|tests|__tests__|spec)\//, 'a test directory'],
  [/\.(spec|test|e2e-spec)\.[cm]?[jt]sx?$/, 'a test file'],
  [/(?<!\.d)\.[cm]?tsx?$/, 'a TypeScript source'],
  [/\.tsbuildinfo$/, 'a build-info file'],
];
const STEP_TIMEOUT_MS = { build: 120_000, pack: 60_000, install: 180_000, typecheck: 90_000, test: 120_000 };

const started = Date.now();
const secs = (ms) => `${(ms / 1000).toFixed(1)}s`;
const log = (line) => console.log(`[consumers] ${line}`);

/** Runs a command (no shell), output captured; resolves { code, out, ms }. Killed (its process group, by PID) past timeoutMs. */
function run(cmd, args, { cwd = ROOT, timeoutMs = 120_000, env } = {}) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const childEnv = { ...process.env, ...env };
    // When started by `npm run`, do not hand the root package's lifecycle variables to a nested npm.
    for (const key of Object.keys(childEnv)) if (/^npm_(package|lifecycle)_/.test(key)) delete childEnv[key];
    const child = spawn(cmd, args, { cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let stdout = '';
    child.stdout.on('data', (d) => ((out += d), (stdout += d)));
    child.stderr.on('data', (d) => (out += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      resolve({ code: -1, out: `${out}\n${error.message}`, stdout, ms: Date.now() - t0 });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) out += `\n[consumers] ${cmd} ${args.join(' ')}: killed after ${secs(timeoutMs)}`;
      resolve({ code: code ?? (signal ? 128 : -1), out, stdout, ms: Date.now() - t0 });
    });
  });
}

const indent = (text, n = 4) =>
  text
    .split('\n')
    .filter((l) => !/npm warn Unknown (user|env) config/.test(l))
    .map((l) => ' '.repeat(n) + l)
    .join('\n');

/** npm prints notices to stdout in some versions: take the JSON array that stdout carries. */
function parseNpmJson(stdout) {
  const start = stdout.indexOf('[');
  return JSON.parse(stdout.slice(start));
}

function jestSummary(out) {
  // eslint-disable-next-line no-control-regex -- ANSI colour codes in the apps' output
  const lines = out.split('\n').map((l) => l.replace(/\x1b\[[0-9;]*m/g, ''));
  const keep = lines.filter((l) => /^(Test Suites|Tests|Snapshots|Time):/.test(l) || /^\s+(✓|✕|○)/.test(l) || /^(PASS|FAIL) /.test(l));
  return keep.join('\n');
}

/** Everything in the packed file list that consumers do not need, plus exports targets that are missing. */
function checkPackList(files, pkg) {
  const problems = [];
  for (const file of files) {
    if (!ALLOWED.some((re) => re.test(file))) problems.push(`${file}: outside dist/esm, dist/cjs, README.md, package.json, LICENSE`);
    for (const [re, what] of NOT_SHIPPED) if (re.test(file)) problems.push(`${file}: ${what}`);
  }
  const listed = new Set(files);
  const targets = [];
  const walk = (node, where) => {
    if (typeof node === 'string') return targets.push([where, node]);
    if (node && typeof node === 'object') {
      const keys = Object.keys(node);
      if (keys.includes('types') && keys[0] !== 'types') problems.push(`exports ${where}: "types" must come first among its conditions`);
      for (const [key, value] of Object.entries(node))
        walk(value, key.startsWith('.') ? `${where}[${JSON.stringify(key)}]` : `${where}.${key}`);
    }
  };
  walk(pkg.exports, 'exports');
  for (const field of ['main', 'module', 'types']) if (pkg[field]) targets.push([field, pkg[field]]);
  for (const [where, target] of targets) {
    const file = target.replace(/^\.\//, '');
    if (!listed.has(file)) problems.push(`${where} -> ${target}: not in the package`);
  }
  const conditions = pkg.exports?.['.'] ?? {};
  for (const condition of ['import', 'require']) {
    if (!conditions[condition]?.types) problems.push(`exports["."].${condition}: no "types"`);
  }
  if (!files.includes('dist/cjs/package.json')) problems.push('dist/cjs/package.json ({"type":"commonjs"}) is not in the package');
  // Both builds carry the same modules (a difference means a stale or half-done build).
  const modules = (flavour) =>
    new Set(
      files.filter((f) => f.startsWith(`dist/${flavour}/`) && /\.(js|d\.ts)$/.test(f)).map((f) => f.slice(`dist/${flavour}/`.length)),
    );
  const esm = modules('esm');
  const cjs = modules('cjs');
  for (const f of esm) if (!cjs.has(f)) problems.push(`dist/esm/${f}: no dist/cjs counterpart`);
  for (const f of cjs) if (!esm.has(f)) problems.push(`dist/cjs/${f}: no dist/esm counterpart`);
  return problems;
}

async function consumer(name, tarball, tmp) {
  const report = { name, ok: false, steps: [], summary: '', detail: '' };
  const dir = path.join(tmp, name);
  const pkg = JSON.parse(readFileSync(path.join(CONSUMERS, name, 'package.json'), 'utf8'));
  const flavour = pkg.type === 'module' ? 'esm' : 'cjs';
  const other = flavour === 'esm' ? 'cjs' : 'esm';
  cpSync(path.join(CONSUMERS, name), dir, {
    recursive: true,
    filter: (src) => !/[\\/](node_modules|coverage)$/.test(src) && !/package-lock\.json$/.test(src),
  });
  // The one redis-server spawner of this repo, as the app's own test/redis-spawner.js (with its types).
  cpSync(path.join(ROOT, 'scripts', 'redis-spawner.mjs'), path.join(dir, 'test', 'redis-spawner.js'));
  cpSync(path.join(ROOT, 'scripts', 'redis-spawner.d.mts'), path.join(dir, 'test', 'redis-spawner.d.ts'));
  const step = async (label, cmd, args, timeoutMs) => {
    const result = await run(cmd, args, { cwd: dir, timeoutMs });
    report.steps.push(`${label} ${secs(result.ms)}`);
    return result;
  };
  const fail = (what, result) => {
    report.detail = `${what} failed (exit ${result.code}):\n${indent(result.out.trim().split('\n').slice(-80).join('\n'))}`;
    return report;
  };

  const install = await step(
    'install',
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball],
    STEP_TIMEOUT_MS.install,
  );
  if (install.code !== 0) return fail('npm install', install);
  const installed = path.join(dir, 'node_modules', 'nest-redlock');
  if (lstatSync(installed).isSymbolicLink()) {
    report.detail = `node_modules/nest-redlock is a symlink, not the unpacked tarball`;
    return report;
  }
  const extra = readdirSync(installed).filter((f) => !['dist', 'README.md', 'package.json', 'LICENSE'].includes(f));
  if (extra.length) {
    report.detail = `the installed package has unexpected entries: ${extra.join(', ')}`;
    return report;
  }

  // Plain Node (not jest's module loader) resolves and loads the build this app's module system should get.
  // Then: a client over nodes the application passes (in-memory ones, of ioredis's shape) leaves the
  // package's own ioredis unloaded, and a node given as a URL loads it (so the check can fail).
  const ioredisChecks = `
    const ioredisLoaded = () => Object.keys(Module._cache).some((f) => /[\\\\/]node_modules[\\\\/]ioredis[\\\\/]/.test(f));
    const fail = (...why) => { console.error(...why); process.exit(1); };
    const passedIn = testing.createMemoryRedlock();
    await (await passedIn.acquire('smoke', 1000)).release();
    await passedIn.close();
    if (ioredisLoaded()) fail('ioredis was loaded for a client over nodes the application passed in');
    const owned = new m.Redlock({ nodes: ['redis://127.0.0.1:1'] });
    await owned.close();
    if (!ioredisLoaded()) fail('a node given as a URL did not load ioredis (is the check blind?)');`;
  const smoke =
    flavour === 'esm'
      ? [
          '--input-type=module',
          '-e',
          `import Module from 'node:module';
          const url = import.meta.resolve('nest-redlock'); const m = await import('nest-redlock'); if (!url.endsWith('/dist/esm/index.js') || typeof m.Locked !== 'function' || typeof m.RedlockModule !== 'function') { console.error('loaded', url, Object.keys(m)); process.exit(1); }
          const testing = await import('nest-redlock/testing');${ioredisChecks}`,
        ]
      : [
          '-e',
          `const Module = require('node:module');
          const file = require.resolve('nest-redlock'); const m = require('nest-redlock'); if (!file.endsWith('/dist/cjs/index.js') || typeof m.Locked !== 'function' || typeof m.RedlockModule !== 'function' || !require.cache[file]) { console.error('loaded', file, Object.keys(m)); process.exit(1); }
          const testing = require('nest-redlock/testing');
          (async () => {${ioredisChecks}
          })().catch((error) => { console.error(error); process.exit(1); });`,
        ];
  const node = await step(`node ${flavour === 'esm' ? 'import' : 'require'}`, process.execPath, smoke, 30_000);
  if (node.code !== 0) return fail(`loading nest-redlock with plain node (${flavour})`, node);

  const typecheck = await step('typecheck', 'npm', ['run', 'typecheck', '--', '--explainFiles'], STEP_TIMEOUT_MS.typecheck);
  if (typecheck.code !== 0) return fail('npm run typecheck', typecheck);
  const declarations = [...new Set(typecheck.out.match(/node_modules\/nest-redlock\/[^\s']+\.d\.ts/g) ?? [])];
  if (
    !declarations.includes(`node_modules/nest-redlock/dist/${flavour}/index.d.ts`) ||
    declarations.some((d) => d.includes(`/dist/${other}/`))
  ) {
    report.detail = `TypeScript did not take the package's types from dist/${flavour} only; it read:\n${indent(declarations.join('\n') || '(none)')}`;
    return report;
  }
  report.steps.push(`types from dist/${flavour} (${declarations.length} .d.ts)`);

  const test = await step('test', 'npm', ['test'], STEP_TIMEOUT_MS.test);
  report.summary = jestSummary(test.out);
  if (test.code !== 0) return fail('npm test', test);
  report.ok = true;
  return report;
}

async function main() {
  const wanted = process.argv.slice(2);
  const names = readdirSync(CONSUMERS, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(CONSUMERS, d.name, 'package.json')))
    .map((d) => d.name)
    .filter((n) => wanted.length === 0 || wanted.includes(n))
    .sort()
    .reverse(); // nest12-esm first
  if (wanted.some((n) => !names.includes(n))) {
    log(`unknown consumer(s): ${wanted.filter((n) => !names.includes(n)).join(', ')} (have: ${readdirSync(CONSUMERS).join(', ')})`);
    return 1;
  }

  const build = await run('npm', ['run', 'build'], { timeoutMs: STEP_TIMEOUT_MS.build });
  log(`npm run build: ${build.code === 0 ? 'ok' : 'FAILED'} (${secs(build.ms)})`);
  if (build.code !== 0) {
    console.log(indent(build.out));
    return 1;
  }

  const rootPkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const dry = await run('npm', ['pack', '--dry-run', '--json'], { timeoutMs: STEP_TIMEOUT_MS.pack });
  if (dry.code !== 0) {
    log(`npm pack --dry-run: FAILED (${secs(dry.ms)})`);
    console.log(indent(dry.out));
    return 1;
  }
  const [packInfo] = parseNpmJson(dry.stdout);
  const files = packInfo.files.map((f) => f.path).sort();
  const byDir = {};
  for (const f of files) {
    const top = f.startsWith('dist/') ? f.split('/').slice(0, 2).join('/') + '/' : f;
    byDir[top] = (byDir[top] ?? 0) + 1;
  }
  log(
    `npm pack --dry-run: ${packInfo.entryCount} files, ${(packInfo.size / 1024).toFixed(1)} kB packed, ` +
      `${(packInfo.unpackedSize / 1024).toFixed(1)} kB unpacked (${secs(dry.ms)}): ` +
      Object.entries(byDir)
        .map(([k, n]) => `${k} ${n}`)
        .join(', '),
  );
  const problems = checkPackList(files, rootPkg);
  const maps = files.filter((f) => f.endsWith('.map'));
  if (maps.length) {
    const sample = JSON.parse(readFileSync(path.join(ROOT, maps.find((m) => m === 'dist/esm/index.js.map') ?? maps[0]), 'utf8'));
    const inlined = Array.isArray(sample.sourcesContent) && sample.sourcesContent.length > 0;
    if (!inlined) {
      log(
        `note: ${maps.length} source maps point at sources the package does not ship (${sample.sources.join(', ')}); ` +
          'they only help with "inlineSources": true, or can be left out',
      );
    }
  }
  if (!files.some((f) => /^LICEN[CS]E/.test(f)))
    log(`note: no LICENSE file in the package (package.json says "license": ${JSON.stringify(rootPkg.license)})`);
  if (problems.length) {
    log('the package lists what consumers do not need, or misses what they do:');
    console.log(indent(problems.join('\n')));
  }

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'nest-redlock-consumers-'));
  let keep = process.env.KEEP_CONSUMERS_TMP === '1';
  let failed = problems.length > 0;
  try {
    const pack = await run('npm', ['pack', '--json', '--pack-destination', tmp], { timeoutMs: STEP_TIMEOUT_MS.pack });
    if (pack.code !== 0) {
      log(`npm pack: FAILED (${secs(pack.ms)})`);
      console.log(indent(pack.out));
      keep = true;
      return 1;
    }
    const [packed] = parseNpmJson(pack.stdout);
    const tarball = path.join(tmp, packed.filename);
    log(`npm pack: ${path.basename(tarball)} (${secs(pack.ms)})`);
    const packedFiles = packed.files.map((f) => f.path).sort();
    if (packedFiles.join('\n') !== files.join('\n')) {
      log(
        `the tarball's ${packedFiles.length} files differ from the dry run's ${files.length}: dist changed in between (another build running?)`,
      );
      failed = true;
    }

    const serial = process.env.CONSUMERS_SERIAL === '1';
    const reports = [];
    const one = async (name) => {
      const t0 = Date.now();
      const report = await consumer(name, tarball, tmp);
      report.ms = Date.now() - t0;
      return report;
    };
    if (serial) for (const name of names) reports.push(await one(name));
    else reports.push(...(await Promise.all(names.map(one))));

    for (const r of reports) {
      log(`${r.name}: ${r.ok ? 'ok' : 'FAILED'} in ${secs(r.ms)} (${r.steps.join(', ')})`);
      if (r.summary) console.log(indent(r.summary));
      if (r.detail) console.log(indent(r.detail));
    }
    const bad = reports.filter((r) => !r.ok);
    if (bad.length) failed = true;
    log(
      `${bad.length === 0 ? 'all' : `${reports.length - bad.length} of`} ${reports.length} consumer apps ok` +
        (bad.length ? `; failed: ${bad.map((r) => r.name).join(', ')}` : '') +
        (problems.length ? `; package contents: ${problems.length} problem(s)` : '') +
        ` (total ${secs(Date.now() - started)})`,
    );
    if (failed) keep = true;
    return failed ? 1 : 0;
  } finally {
    if (keep) log(`temp dir kept: ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  }
}

process.exitCode = await main().catch((error) => {
  console.error(error);
  return 1;
});
