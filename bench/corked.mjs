/**
 * Sends one tick's commands to an ioredis client in one socket write, as this library's
 * ioredis adapter does: the socket is corked until the end of the tick. Returns `send()`.
 */
export function corked(client, send) {
  const stream = client.stream;
  if (stream && !stream.writableCorked) {
    stream.cork();
    process.nextTick(() => stream.uncork());
  }
  return send();
}
