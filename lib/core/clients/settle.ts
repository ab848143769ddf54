/** Settles when `promise` does, never rejecting: what follows reads the outcome elsewhere. */
export function quietly(promise: Promise<unknown>): Promise<void> {
  return promise.then(
    () => undefined,
    () => undefined,
  );
}

/** Settles with `promise`'s error, or `undefined` once it is fulfilled; never rejects. */
export function refusalOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}
