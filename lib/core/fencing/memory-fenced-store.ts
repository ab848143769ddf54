import { StaleTokenError } from '../errors/stale-token.error.js';
import { checkToken, type FencedStore } from './fenced-store.js';

/**
 * A `FencedStore` in this process's memory: for tests, samples and single
 * process resources. Linearizable because Node runs one access at a time.
 */
export class MemoryFencedStore implements FencedStore {
  private readonly data = new Map<string, string>();
  private readonly highest = new Map<string, number>();

  async get(key: string, token: number): Promise<string | null> {
    this.admit(key, token);
    return this.data.get(key) ?? null;
  }

  async set(key: string, value: string, token: number): Promise<void> {
    this.admit(key, token);
    this.data.set(key, value);
  }

  async delete(key: string, token: number): Promise<void> {
    this.admit(key, token);
    this.data.delete(key);
  }

  private admit(key: string, token: number): void {
    checkToken(token);
    const seen = this.highest.get(key) ?? 0;
    if (token < seen) throw new StaleTokenError(key, token, seen);
    this.highest.set(key, token);
  }
}
