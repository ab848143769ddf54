import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';

// GLIDE's core logs every reconnect and NOSCRIPT at WARN on the console; the tests cause both on purpose.
// GLIDE_LOG=error (or warn, info, ...) shows them.
Logger.setLoggerConfig((process.env.GLIDE_LOG ?? 'off') as Parameters<typeof Logger.setLoggerConfig>[0]);

/**
 * The per-request timeout of the tests' GLIDE clients. GLIDE's default (250 ms)
 * fails a command itself, before the lock client's own node timeout, when the
 * loaded test machine deschedules a server for a moment.
 */
export const GLIDE_REQUEST_TIMEOUT = 2000;

/** A standalone GLIDE client of the server on `port` (127.0.0.1). */
export function glideClient(port: number, options: Partial<Parameters<typeof GlideClient.createClient>[0]> = {}): Promise<GlideClient> {
  return GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port }], requestTimeout: GLIDE_REQUEST_TIMEOUT, ...options });
}

/** A GLIDE cluster client of the cluster that `seeds` belong to. */
export function glideClusterClient(seeds: readonly { host: string; port: number }[]): Promise<GlideClusterClient> {
  return GlideClusterClient.createClient({ addresses: seeds.map((s) => ({ ...s })), requestTimeout: GLIDE_REQUEST_TIMEOUT });
}

/**
 * Records the number of commands of each pipeline (batch) the clients are
 * given: their own `exec`, wrapped, so the clients stay real. Returns what
 * puts the prototype's `exec` back.
 */
export function watchPipelines(clients: readonly (GlideClient | GlideClusterClient)[], sizes: number[]): () => void {
  for (const c of clients) {
    const exec = c.exec.bind(c) as (batch: unknown, ...rest: unknown[]) => Promise<unknown>;
    (c as { exec: unknown }).exec = (batch: unknown, ...rest: unknown[]) => {
      sizes.push((batch as { commands: unknown[] }).commands.length);
      return exec(batch, ...rest);
    };
  }
  return () => clients.forEach((c) => delete (c as { exec?: unknown }).exec);
}

/**
 * Records the command name of each request the clients are sent alone
 * (`customCommand`, wrapped as in `watchPipelines`). Returns what puts it back.
 */
export function watchSingles(clients: readonly (GlideClient | GlideClusterClient)[], names: string[]): () => void {
  for (const c of clients) {
    const customCommand = c.customCommand.bind(c) as (args: string[], ...rest: unknown[]) => Promise<unknown>;
    (c as { customCommand: unknown }).customCommand = (args: string[], ...rest: unknown[]) => {
      names.push(String(args[0]));
      return customCommand(args, ...rest);
    };
  }
  return () => clients.forEach((c) => delete (c as { customCommand?: unknown }).customCommand);
}
