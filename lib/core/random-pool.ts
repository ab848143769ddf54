import { randomFillSync } from 'node:crypto';

/**
 * Bytes from the system CSPRNG, drawn 4 KiB at a time and handed out once
 * each. A `randomBytes` call per lock made the OpenSSL round (and its fork
 * check, a syscall) show up on the lock's hot path; the bytes are the same
 * quality either way.
 *
 * The buffer is truly private and every byte is wiped once read: lock values
 * are cut from it, so neither a logger that walks objects nor a later reader
 * may see bytes that were handed out.
 */
export class RandomPool {
  readonly #buffer = Buffer.allocUnsafe(4096);
  #offset = this.#buffer.length;

  /** Lets `read` turn `n` fresh bytes (n <= 4096) into what it needs, then wipes them. */
  take<T>(n: number, read: (bytes: Buffer, at: number) => T): T {
    if (this.#offset + n > this.#buffer.length) {
      randomFillSync(this.#buffer);
      this.#offset = 0;
    }
    const at = this.#offset;
    this.#offset += n;
    try {
      return read(this.#buffer, at);
    } finally {
      this.#buffer.fill(0, at, at + n);
    }
  }
}
