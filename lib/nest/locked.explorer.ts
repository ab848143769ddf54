import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { LockService } from './lock.service.js';
import { lockedMetadataOf } from './locked.metadata.js';
import { lockedRunnerOf } from './locked.stand-in.js';
import { addLiveModule, addPendingScan, NEARNESS, offerRunner, withdrawRunner, type LockedRunner } from './locked.registry.js';
import { cronOptionsOf, loadCron } from './schedule-tick.js';
import { loadRpcException, loadWsException } from './transport-errors.js';
import { isMessageHandler } from './message-handlers.js';

/** `@nestjs/websockets` marks gateway classes with this key. */
const GATEWAY_METADATA = 'websockets:is_gateway';

/**
 * Finds the providers and controllers with `@Locked` methods and ties each
 * instance to this module's `LockService`. Methods are not replaced here: the
 * decorator wrapped them already, so schedulers and routers that captured the
 * method before this runs still call the locked version.
 */
@Injectable()
export class LockedExplorer implements OnModuleInit, OnModuleDestroy {
  /** Whether some `@Locked` method is a `@Cron` method (its key may read `{tick}`). */
  private cron = false;
  /** Whether some `@Locked` method is a message handler (`@MessagePattern`, `@EventPattern`). */
  private rpc = false;
  /** Scoped classes this module's runner was offered for, taken back when it closes. */
  private readonly classes = new Set<object>();
  private readonly settle: () => void;
  private leave: () => void = () => undefined;
  /** This module's LockService, or a stand-in's refusing runner (see lockedRunnerOf). */
  private readonly runner: LockedRunner;

  constructor(
    private readonly discovery: DiscoveryService,
    locks: LockService,
  ) {
    this.runner = lockedRunnerOf(locks);
    // Until this module's init, a call on an instance not yet registered has it scan (see runnerOf).
    this.settle = addPendingScan(this);
  }

  async onModuleInit(): Promise<void> {
    const gateways = this.scan();
    this.settle();
    this.leave = addLiveModule(this.runner, () => void this.scan());
    // What a call may need later, loaded now so that no call waits for it: WsException
    // for gateways' busy answers, the cron package for `{tick}` keys, RpcException for
    // message handlers' busy answers.
    if (gateways) await loadWsException();
    if (this.cron) await loadCron();
    if (this.rpc) await loadRpcException();
  }

  onModuleDestroy(): void {
    this.settle();
    this.leave();
    for (const prototype of this.classes) withdrawRunner(prototype, this.runner);
  }

  /** @internal Offers this module's runner for every instance (or scoped class) with `@Locked` methods; true when there are gateways. */
  scan(): boolean {
    const wrappers = [...this.discovery.getProviders(), ...this.discovery.getControllers()];
    const host = wrappers.find((wrapper) => wrapper.instance === this)?.host;
    let gateways = false;
    for (const wrapper of wrappers) {
      gateways ||= typeof wrapper.metatype === 'function' && Reflect.getMetadata(GATEWAY_METADATA, wrapper.metatype) === true;
      const nearness = !host
        ? NEARNESS.elsewhere
        : wrapper.host === host || wrapper.host?.imports.has(host)
          ? NEARNESS.imports
          : host.isGlobal
            ? NEARNESS.global
            : NEARNESS.elsewhere;
      // Transient providers are static to Nest, but each consumer gets its own instance, made later.
      if (wrapper.isDependencyTreeStatic() && !wrapper.isTransient) {
        const instance: unknown = wrapper.instance;
        if (instance && typeof instance === 'object' && this.hasLocked(Object.getPrototypeOf(instance) as object)) {
          offerRunner(instance, this.runner, nearness, true);
        }
      } else {
        // Request-scoped or transient: instances come later, one per request or consumer; their class is registered.
        const prototype = (wrapper.metatype as { prototype?: unknown } | null)?.prototype;
        if (prototype && typeof prototype === 'object' && this.hasLocked(prototype)) {
          offerRunner(prototype, this.runner, nearness, false);
          this.classes.add(prototype);
        }
      }
    }
    return gateways;
  }

  /** Whether the class has `@Locked` methods, its base classes' included (an override may call `super`). */
  private hasLocked(prototype: object): boolean {
    let locked = false;
    for (let p: object | null = prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null) {
      for (const name of Object.getOwnPropertyNames(p)) {
        const method: unknown = Object.getOwnPropertyDescriptor(p, name)?.value;
        if (typeof method !== 'function' || lockedMetadataOf(method) === undefined) continue;
        locked = true;
        this.cron ||= cronOptionsOf(method) !== undefined;
        this.rpc ||= isMessageHandler(method);
      }
    }
    return locked;
  }
}
