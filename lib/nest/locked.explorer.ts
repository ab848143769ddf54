import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { LockService } from './lock.service.js';
import { registerLockedInstance } from './locked.registry.js';
import { LOCKED_METADATA } from './redlock.constants.js';

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
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
      const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
      const locked = this.scanner
        .getAllMethodNames(prototype)
        .some((name) => typeof prototype[name] === 'function' && Reflect.hasMetadata(LOCKED_METADATA, prototype[name] as object));
      if (locked) registerLockedInstance(instance, this.locks);
    }
  }
}
