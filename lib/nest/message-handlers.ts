/** Where `@MessagePattern` / `@EventPattern` record a handler's patterns (`@nestjs/microservices`' `PATTERN_METADATA`). */
const PATTERN_METADATA = 'microservices:pattern';
/** And its kind (`PATTERN_HANDLER_METADATA`): `PatternHandler.EVENT` (2) for `@EventPattern`. */
const PATTERN_HANDLER_METADATA = 'microservices:handler_type';
const EVENT = 2;

/** Whether `method` handles microservice messages (`@MessagePattern` or `@EventPattern`); read without importing the optional peer. */
export function isMessageHandler(method: unknown): boolean {
  return typeof method === 'function' && Reflect.getMetadata(PATTERN_METADATA, method) !== undefined;
}

/** Whether `method` is an `@EventPattern` handler: it answers no caller. */
export function isEventHandler(method: unknown): boolean {
  return typeof method === 'function' && Reflect.getMetadata(PATTERN_HANDLER_METADATA, method) === EVENT;
}
