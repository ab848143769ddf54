import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import type { LockedMetadata } from './locked.metadata.js';
import { lockedMetadataOf } from './locked.metadata.js';
import type { LockedRunner } from './locked.registry.js';
import { LockService } from './lock.service.js';
import { lockedRunnerOf } from './locked.stand-in.js';
import type { RedlockModuleOptions } from './redlock-module-options.interface.js';
import { UNLOCKED_METADATA } from './redlock.constants.js';
import { REDLOCK_MODULE_OPTIONS } from './redlock.module-definition.js';
import type { ScheduleLockOptions } from './schedule-lock.options.js';
import { loadCron } from './schedule-tick.js';

/** `@nestjs/schedule` marks `@Cron` (1), `@Timeout` (2) and `@Interval` (3) methods with this key. */
const SCHEDULER_TYPE = 'SCHEDULER_TYPE';
const CRON = 1;

/** The instances whose scheduled methods run locked, with their application's runner and settings. */
const scheduled = new WeakMap<object, { runner: LockedRunner; settings: ScheduleLockOptions }>();
/** The wrappers this file installed, so that a class is wrapped once however many applications share it. */
const wrappers = new WeakSet<object>();
/** Each application's metadata for each wrapped method (the settings object stands for the application). */
const metadataCache = new WeakMap<ScheduleLockOptions, Map<string, LockedMetadata>>();

/**
 * The module option `schedule`: locks every `@Cron`, `@Interval` and
 * `@Timeout` method without `@Locked` or `@Unlocked()`. The scheduler reads
 * each method from its instance in its own `onModuleInit`, which may come
 * before this module's, so the methods are wrapped on their classes here, in
 * the constructor, before any module's `onModuleInit`. A wrapped method of an
 * instance no application with the option manages runs as it is.
 */
@Injectable()
export class ScheduleLocker implements OnModuleInit {
  private readonly settings: ScheduleLockOptions | undefined;
  private readonly prototypes = new Set<object>();
  private readonly runner: LockedRunner;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    locks: LockService,
    @Inject(REDLOCK_MODULE_OPTIONS) options: RedlockModuleOptions,
  ) {
    this.runner = lockedRunnerOf(locks);
    const schedule = options.schedule;
    if (!schedule) return;
    this.settings = schedule === true ? {} : schedule;
    for (const wrapper of [...discovery.getProviders(), ...discovery.getControllers()]) {
      const prototype = prototypeOf(wrapper);
      if (prototype && this.wrapScheduled(prototype)) this.prototypes.add(prototype);
    }
  }

  async onModuleInit(): Promise<void> {
    if (!this.settings) return;
    if (this.settings.perTick) await loadCron();
    for (const wrapper of this.discovery.getProviders()) {
      const instance: unknown = wrapper.instance;
      if (!wrapper.isDependencyTreeStatic() || !instance || typeof instance !== 'object') continue;
      if (this.prototypes.has(Object.getPrototypeOf(instance) as object)) {
        scheduled.set(instance, { runner: this.runner, settings: this.settings });
      }
    }
  }

  /** Wraps the class's scheduled methods (once per class); whether it has any. */
  private wrapScheduled(prototype: object): boolean {
    const methods = prototype as Record<string, unknown>;
    let found = false;
    for (const name of this.scanner.getAllMethodNames(prototype)) {
      const method = methods[name];
      if (typeof method !== 'function' || Reflect.getMetadata(SCHEDULER_TYPE, method) === undefined) continue;
      if (lockedMetadataOf(method) || Reflect.getMetadata(UNLOCKED_METADATA, method)) continue; // its own @Locked, or opted out
      found = true;
      if (!wrappers.has(method)) methods[name] = wrap(prototype, name, method as (...args: unknown[]) => unknown);
    }
    return found;
  }
}

/** The class prototype of a provider made from a class (or given as a value); factories' classes are unknown before they run. */
function prototypeOf(wrapper: InstanceWrapper): object | undefined {
  if (wrapper.isFactory) return undefined;
  if (wrapper.isNotMetatype) return wrapper.instance ? (Object.getPrototypeOf(wrapper.instance) as object) : undefined;
  const prototype = (wrapper.metatype as { prototype?: unknown } | null)?.prototype;
  return prototype && typeof prototype === 'object' ? prototype : undefined;
}

function wrap(prototype: object, name: string, original: (...args: unknown[]) => unknown): (...args: unknown[]) => unknown {
  const className = prototype.constructor.name;
  const isCron = Reflect.getMetadata(SCHEDULER_TYPE, original) === CRON;
  const locked = function (this: object, ...args: unknown[]): unknown {
    const entry = scheduled.get(this);
    if (!entry) return original.apply(this, args);
    return entry.runner.run(metadataFor(entry.settings, className, name, isCron), this, args, original);
  };
  // The scheduler finds the method by this metadata, now read from the wrapper.
  for (const key of Reflect.getMetadataKeys(original)) Reflect.defineMetadata(key, Reflect.getMetadata(key, original), locked);
  Object.defineProperty(locked, 'name', { value: original.name });
  wrappers.add(locked);
  return locked;
}

function metadataFor(settings: ScheduleLockOptions, className: string, name: string, isCron: boolean): LockedMetadata {
  let cache = metadataCache.get(settings);
  if (!cache) metadataCache.set(settings, (cache = new Map()));
  const method = `${className}.${name}`;
  let metadata = cache.get(method);
  if (!metadata) {
    // Class and method names are identifiers: used as they are, not encoded like placeholder values.
    const key = `${settings.prefix ?? 'schedule:'}${method}${settings.perTick && isCron ? ':{tick}' : ''}`;
    metadata = {
      key,
      ttl: settings.ttl,
      options: settings.lockAtLeastFor === undefined ? {} : { lockAtLeastFor: settings.lockAtLeastFor },
      method,
      propertyKey: name,
      returnsObservable: false,
    };
    cache.set(method, metadata);
  }
  return metadata;
}
