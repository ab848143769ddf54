import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Names the README's snippets use without defining them: the reader's own
 * code. Everything else must compile against the library as it is.
 */
const PRELUDE = `
import type { Redlock as RedlockType, LockService as LockServiceType } from 'nest-redlock';
declare global {
  function buildReport(options: { signal?: AbortSignal; fencingToken?: number }): Promise<void>;
  const nodes: string[];
  const redlock: RedlockType;
  const lockService: LockServiceType;
}
export {};
`;

function blocks(): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  return [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe('README', () => {
  it('has TypeScript examples', () => {
    expect(blocks().length).toBeGreaterThan(3);
  });

  it('every TypeScript block compiles against the library', () => {
    const files = new Map<string, string>([[join(root, '.readme', 'prelude.ts'), PRELUDE]]);
    blocks().forEach((code, i) => {
      // A block without imports or exports is a script; make each one a module of its own.
      files.set(join(root, '.readme', `block-${i + 1}.ts`), `${code}\nexport {};\n`);
    });
    const options: ts.CompilerOptions = {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      experimentalDecorators: true,
      emitDecoratorMetadata: true,
      types: ['node'],
      baseUrl: root,
      paths: {
        'nest-redlock': ['lib/index.ts'],
        'nest-redlock/health': ['lib/health/index.ts'],
        'nest-redlock/testing': ['lib/testing/index.ts'],
        redis: ['node_modules/redis5'], // the README's node-redis example, on the v5 the tests install
      },
      rootDir: root,
    };
    const host = ts.createCompilerHost(options);
    const readFile = host.readFile.bind(host);
    const fileExists = host.fileExists.bind(host);
    host.readFile = (name) => files.get(name) ?? readFile(name);
    host.fileExists = (name) => files.has(name) || fileExists(name);
    const program = ts.createProgram([...files.keys()], options, host);
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file && files.has(d.file.fileName))
      .map((d) => {
        const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
        const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
        return `${d.file!.fileName.split('/').pop()}:${line + 1}: ${text}`;
      });
    expect(problems).toEqual([]);
  });
});
