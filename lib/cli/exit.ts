/**
 * Exits with `code` once every stream has handed what was written to it to
 * the OS. A pipe is written asynchronously, and `process.exit()` drops what
 * is still queued: `nest-redlock list --json | jq` got the first 64 KiB.
 */
export function exitWhenWritten(
  code: number,
  streams: readonly NodeJS.WritableStream[] = [process.stdout, process.stderr],
  exit: (code: number) => void = process.exit,
): void {
  let left = streams.length;
  // Writes are done in order: an empty one's callback runs after every earlier write's.
  for (const stream of streams) stream.write('', () => --left === 0 && exit(code));
}
