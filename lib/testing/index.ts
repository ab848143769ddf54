export { MemoryRedisNode, createMemoryNodes, type MemoryNodeStatus } from './memory-node.js';
export type { MemoryRedisNodeOptions } from './memory-server.js';
export { asNodeSpecs, createMemoryRedlock, type MemoryRedlockOptions, type MemoryNodesOption } from './memory-redlock.js';
export { RedlockTestingModule, MEMORY_REDIS_NODES, type RedlockTestingModuleOptions } from './redlock-testing.module.js';
