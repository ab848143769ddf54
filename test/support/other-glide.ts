import { cpSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { GlideClient, Logger } from '@valkey/valkey-glide';

/**
 * A second copy of the GLIDE package, as an application that depends on it
 * has beside another copy: the same code at another path, so its classes are
 * not the first copy's (`instanceof` fails). The native binary is the
 * installed one (the copy requires it by package name).
 */
export async function otherGlide(): Promise<typeof GlideClient> {
  const root = path.resolve('node_modules');
  const copy = path.join(root, '.cache', 'glide-copy', 'node_modules', '@valkey', 'valkey-glide');
  if (!existsSync(path.join(copy, 'package.json'))) cpSync(path.join(root, '@valkey', 'valkey-glide'), copy, { recursive: true });
  const module = (await import(path.join(copy, 'build-ts', 'index.js'))) as {
    default: { GlideClient: typeof GlideClient; Logger: typeof Logger };
  };
  // Each copy's Logger sets up the one native logger at WARN on its first client, unless configured.
  module.default.Logger.setLoggerConfig('off');
  return module.default.GlideClient;
}
