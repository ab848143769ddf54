import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LockService } from './lock.service.js';
import { lockedMetadataOf } from './locked.metadata.js';
import { registerLockedClass, registerLockedInstance } from './locked.registry.js';

/**
 * Finds the providers and controllers with `@Locked` methods and ties each
 * instance to this module's `LockService`. Methods are not replaced here: the
 * decorator wrapped them already, so schedulers and routers that captured the
 * method before this runs still call the locked version.
 */
@Injectable()
export class LockedExplorer implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly locks: LockService,
  ) {}

  onModuleInit(): void {
    for (const wrapper of [...this.discovery.getProviders(), ...this.discovery.getControllers()]) {
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
  }

  private hasLocked(prototype: object): boolean {
    const methods = prototype as Record<string, unknown>;
    return this.scanner.getAllMethodNames(prototype).some((name) => lockedMetadataOf(methods[name]) !== undefined);
  }
}
