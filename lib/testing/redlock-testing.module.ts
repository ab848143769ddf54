import { type DynamicModule, Module } from '@nestjs/common';
import type { RedlockModuleOptions } from '../nest/redlock-module-options.interface.js';
import { RedlockModule } from '../nest/redlock.module.js';
import type { MemoryRedisNode } from './memory-node.js';
import { asNodeSpecs, resolveMemoryNodes, type MemoryNodesOption } from './memory-redlock.js';

/** Injection token of the module's in-memory nodes (`MemoryRedisNode[]`), to fail them or read their keys in a test. */
export const MEMORY_REDIS_NODES = 'REDLOCK:MEMORY_REDIS_NODES';

/** Options of `RedlockTestingModule.forRoot`: those of `RedlockModule.forRoot`, with in-memory nodes. */
export interface RedlockTestingModuleOptions extends Omit<RedlockModuleOptions, 'nodes'> {
  /** Default 3 new nodes per application (a quorum of 2); or nodes made by the test. */
  readonly nodes?: MemoryNodesOption;
  /** Register the module globally, as `RedlockModule.forRoot({ isGlobal })` does. Default false. */
  readonly isGlobal?: boolean;
}

/**
 * `RedlockModule` over in-memory nodes, for tests without Redis: the same
 * `Redlock`, `LockService`, `@Locked` interceptor, busy behaviour and
 * `events$`, because it is `RedlockModule` itself with other nodes. The nodes
 * are injectable as `MEMORY_REDIS_NODES`.
 *
 * @example
 * const moduleRef = await Test.createTestingModule({
 *   imports: [RedlockTestingModule.forRoot()],
 *   controllers: [OrdersController],
 * }).compile();
 */
@Module({})
export class RedlockTestingModule {
  static forRoot(options: RedlockTestingModuleOptions = {}): DynamicModule {
    const { nodes, isGlobal = false, ...rest } = options;
    const given = nodes === undefined || typeof nodes === 'number' ? undefined : resolveMemoryNodes(nodes);
    const count = typeof nodes === 'number' ? nodes : 3;
    if (!given) resolveMemoryNodes(count); // a wrong count fails here, at the call
    // New nodes per application (the factory runs once per container), unless the test gave its own.
    const nodesModule: DynamicModule = {
      module: MemoryNodesHolder,
      providers: [{ provide: MEMORY_REDIS_NODES, useFactory: () => given ?? resolveMemoryNodes(count) }],
      exports: [MEMORY_REDIS_NODES],
    };
    const redlockModule = RedlockModule.forRootAsync({
      imports: [nodesModule],
      inject: [MEMORY_REDIS_NODES],
      useFactory: (memory: MemoryRedisNode[]): RedlockModuleOptions => ({ ...rest, nodes: asNodeSpecs(memory) }),
      isGlobal,
    });
    return {
      module: RedlockTestingModule,
      global: isGlobal,
      imports: [nodesModule, redlockModule],
      exports: [nodesModule, redlockModule],
    };
  }
}

/** Holds the in-memory nodes of one `RedlockTestingModule`. */
@Module({})
class MemoryNodesHolder {}
