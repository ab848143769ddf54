import { describe, expect, it } from '@jest/globals';
import { SlotMemory } from '../../lib/core/slot-memory.js';

describe('slot memory', () => {
  it('gives the slot of the last permit released once, to the next permit of that resource', () => {
    const memory = new SlotMemory();
    expect(memory.take('pool', 4)).toBeUndefined();
    memory.released('pool', 2);
    memory.released('pool', 3);
    expect(memory.take('other', 4)).toBeUndefined();
    expect(memory.take('pool', 4)).toBe(3);
    // Forgotten once taken: a second caller of the client at the same moment draws its own.
    expect(memory.take('pool', 4)).toBeUndefined();
  });

  it('gives no slot beyond the limit asked (a semaphore of another limit)', () => {
    const memory = new SlotMemory();
    memory.released('pool', 3);
    expect(memory.take('pool', 2)).toBeUndefined();
    expect(memory.size).toBe(0);
  });

  it('remembers at most 1024 resources, forgetting the one released longest ago first', () => {
    const memory = new SlotMemory();
    for (let i = 0; i < 1024; i++) memory.released(`tenant:${i}`, i % 4);
    // Released again: now the newest, so not the one forgotten.
    memory.released('tenant:0', 1);
    memory.released('tenant:1024', 0);
    expect(memory.size).toBe(1024);
    expect(memory.take('tenant:1', 4)).toBeUndefined();
    expect(memory.take('tenant:0', 4)).toBe(1);
    expect(memory.take('tenant:1024', 4)).toBe(0);
  });
});
