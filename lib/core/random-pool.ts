import { randomFillSync } from 'node:crypto';

/**
 * Bytes from the system CSPRNG, drawn 4 KiB at a time and handed out once
 * each. A `randomBytes` call per lock made the OpenSSL round (and its fork
 * check, a syscall) show up on the lock's hot path; the bytes are the same
 * quality either way.
 */
export class RandomPool {
  private readonly buffer = Buffer.allocUnsafe(4096);
  private offset = this.buffer.length;

  /** Reserves `n` fresh bytes (n <= 4096); returns the buffer and where they start. Read them before the next call. */
  take(n: number): [Buffer, number] {
    if (this.offset + n > this.buffer.length) {
      randomFillSync(this.buffer);
      this.offset = 0;
    }
    const at = this.offset;
    this.offset += n;
    return [this.buffer, at];
  }
}
