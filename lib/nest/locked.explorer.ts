import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LockService } from './lock.service.js';
import { lockedMetadataOf } from './locked.metadata.js';
import { registerLockedClass, registerLockedInstance } from './locked.registry.js';
import { cronOptionsOf, loadCron } from './schedule-tick.js';
import { loadWsException } from './transport-errors.js';

/** `@nestjs/websockets` marks gateway classes with this key. */
const GATEWAY_METADATA = 'websockets:is_gateway';

/**
 * Finds the providers and controllers with `@Locked` methods and ties each
 * instance to this module's `LockService`. Methods are not replaced here: the
 * decorator wrapped them already, so schedulers and routers that captured the
 * method before this runs still call the locked version.
 */
@Injectable()
export class LockedExplorer implements OnModuleInit {
  /** Whether some `@Locked` method is a `@Cron` method (its key may read `{tick}`). */
  private cron = false;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly locks: LockService,
  ) {}

  async onModuleInit(): Promise<void> {
    let gateways = false;
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
      gateways ||= typeof wrapper.metatype === 'function' && Reflect.getMetadata(GATEWAY_METADATA, wrapper.metatype) === true;
      if (wrapper.isDependencyTreeStatic()) {
        const instance: unknown = wrapper.instance;
        if (instance && typeof instance === 'object' && this.hasLocked(Object.getPrototypeOf(instance) as object)) {
          registerLockedInstance(instance, this.locks);
        }
      } else {
        // Request-scoped or transient: instances come later, one per request; their class is registered.
        const prototype = (wrapper.metatype as { prototype?: unknown } | null)?.prototype;
        if (prototype && typeof prototype === 'object' && this.hasLocked(prototype)) registerLockedClass(prototype, this.locks);
      }
    }
    // What a call may need later, loaded now so that no call waits for it: WsException
    // for gateways' busy answers, the cron package for `{tick}` keys.
    if (gateways) await loadWsException();
    if (this.cron) await loadCron();
  }

  private hasLocked(prototype: object): boolean {
    const methods = prototype as Record<string, unknown>;
    const locked = this.scanner.getAllMethodNames(prototype).filter((name) => lockedMetadataOf(methods[name]) !== undefined);
    this.cron ||= locked.some((name) => cronOptionsOf(methods[name]) !== undefined);
    return locked.length > 0;
  }
}
