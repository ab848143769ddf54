import { UNLOCKED_METADATA } from './redlock.constants.js';

/**
 * Opts a `@Cron`, `@Interval` or `@Timeout` method out of the module's
 * `schedule` option: it runs on every instance, without a lock. In either
 * order with the scheduler's decorator.
 *
 * @example
 * @Interval(10_000) @Unlocked() refreshLocalCache() {}
 */
export function Unlocked(): MethodDecorator {
  return (_target, _propertyKey, descriptor) => {
    Reflect.defineMetadata(UNLOCKED_METADATA, true, descriptor.value as object);
  };
}
