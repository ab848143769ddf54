import { StaleTokenError } from '../errors/stale-token.error.js';
import { FENCED_ACCESS, runScript, type ScriptRunner } from '../scripts.js';
import { checkToken, type FencedStore } from './fenced-store.js';

/**
 * A `FencedStore` on one Redis server (the protected resource's own store, not
 * a lock node): each access is one script that checks and records the token
 * and reads or writes the value atomically. Keys: `<prefix>data:<key>` and
 * `<prefix>token:<key>`.
 *
 * @example
 * const store = new RedisFencedStore(new Redis(process.env.STORE_URL));
 * await redlock.using('invoice:42', 10_000, async (lock) => {
 *   const invoice = await store.get('invoice:42', lock.fencingToken!);
 *   await store.set('invoice:42', next(invoice), lock.fencingToken!);
 * });
 */
export class RedisFencedStore implements FencedStore {
  // Truly private: the application's client holds its password in its options, and
  // no inspect, serializer or logger reaches a # field.
  readonly #client: ScriptRunner;

  constructor(
    client: ScriptRunner,
    private readonly prefix = 'fenced:',
  ) {
    this.#client = client;
  }

  async get(key: string, token: number): Promise<string | null> {
    return (await this.access(key, token, 'get')) as string | null;
  }

  async set(key: string, value: string, token: number): Promise<void> {
    await this.access(key, token, 'set', value);
  }

  async delete(key: string, token: number): Promise<void> {
    await this.access(key, token, 'del');
  }

  private async access(key: string, token: number, op: 'get' | 'set' | 'del', value?: string): Promise<unknown> {
    checkToken(token);
    const keys = [`${this.prefix}data:${key}`, `${this.prefix}token:${key}`];
    const args = op === 'set' ? { token, op, value: value! } : { token, op };
    const reply = FENCED_ACCESS.decode(await runScript(this.#client, FENCED_ACCESS, keys, FENCED_ACCESS.argv(args)));
    if (!reply.accepted) throw new StaleTokenError(key, token, reply.highest);
    return reply.value;
  }
}
