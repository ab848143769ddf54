import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { InvalidArgumentError } from '../../lib/core/errors/invalid-argument.error.js';
import { KeyLayout, MAX_RESOURCES, MAX_RESOURCE_LENGTH, hashTagOf, validateResources } from '../../lib/core/keys.js';

// Pure: no server. Resource checks and the key names every script gets.
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');

describe('validateResources', () => {
  it('turns one name into a frozen list of one', () => {
    const out = validateResources('order:42');
    expect(out).toEqual(['order:42']);
    expect(Object.isFrozen(out)).toBe(true);
  });

  it('returns a frozen copy of a list, not the list itself', () => {
    const given = ['a', 'b'];
    const out = validateResources(given);
    expect(out).toEqual(['a', 'b']);
    expect(out).not.toBe(given);
    expect(Object.isFrozen(out)).toBe(true);
  });

  it('takes any non-empty string as a name: newlines, NUL, braces, globs', () => {
    const names = ['a\nb', 'nul\0byte', '{tag}:x', '*?[]', ' '];
    expect(validateResources(names)).toEqual(names);
  });

  it(`takes up to ${MAX_RESOURCES} names of up to ${MAX_RESOURCE_LENGTH} characters`, () => {
    const many = Array.from({ length: MAX_RESOURCES }, (_, i) => `r${i}`);
    expect(validateResources(many)).toHaveLength(MAX_RESOURCES);
    expect(validateResources('x'.repeat(MAX_RESOURCE_LENGTH))[0]).toHaveLength(MAX_RESOURCE_LENGTH);
  });

  it('refuses more names, or longer ones, saying what was expected', () => {
    const tooMany = Array.from({ length: MAX_RESOURCES + 1 }, (_, i) => `r${i}`);
    expect(() => validateResources(tooMany)).toThrow(
      `Expected \`resources\` to be a non-empty array of at most ${MAX_RESOURCES} strings, got an array of length ${MAX_RESOURCES + 1}`,
    );
    expect(() => validateResources(['ok', 'x'.repeat(MAX_RESOURCE_LENGTH + 1)])).toThrow(
      `Expected \`resources[1]\` to be a string of at most ${MAX_RESOURCE_LENGTH} characters`,
    );
  });

  it('refuses empty names, empty lists, other types and a name given twice', () => {
    expect(() => validateResources('')).toThrow('Expected `resource` to be a non-empty string, got "" (string of length 0)');
    expect(() => validateResources([])).toThrow('Expected `resources` to be a non-empty array');
    expect(() => validateResources(['a', 7])).toThrow('Expected `resources[1]` to be a non-empty string, got 7 (number)');
    expect(() => validateResources(42)).toThrow(
      'Expected `resources` to be a non-empty string or a non-empty array of strings, got 42 (number)',
    );
    expect(() => validateResources(undefined)).toThrow(InvalidArgumentError);
    expect(() => validateResources(['a', 'b', 'a'])).toThrow('Expected `resources[2]` to be a resource named only once in one lock');
  });
});

describe('hashTagOf', () => {
  it('is the first non-empty {...} of a name, as Redis Cluster reads it', () => {
    expect(hashTagOf('{order:42}:stock')).toBe('order:42');
    expect(hashTagOf('user:{7}:{8}')).toBe('7');
    expect(hashTagOf('a{b{c}d')).toBe('b{c');
  });

  it('is undefined without braces, with an empty {} first, or with no closing brace', () => {
    expect(hashTagOf('order:42')).toBeUndefined();
    expect(hashTagOf('{}{x}')).toBeUndefined();
    expect(hashTagOf('open{only')).toBeUndefined();
  });
});

describe('KeyLayout', () => {
  it('plain: <prefix><kind>:<resource> for lock, fence, queue and queue deadlines', () => {
    const keys = new KeyLayout('app:', false);
    expect([keys.lock('r'), keys.fence('r'), keys.queue('r'), keys.queueDeadlines('r')]).toEqual([
      'app:lock:r',
      'app:fence:r',
      'app:queue:r',
      'app:queue-deadlines:r',
    ]);
    expect(new KeyLayout('', false).lock('{x}')).toBe('lock:{x}');
  });

  it("cluster: a resource's own hash tag becomes T<tag>, so related resources share a slot", () => {
    const keys = new KeyLayout('app:', true);
    expect(keys.lock('{order:42}:stock')).toBe('app:lock:{Torder:42}:{order:42}:stock');
    expect(keys.fence('{order:42}:payment')).toBe('app:fence:{Torder:42}:{order:42}:payment');
    expect(keys.queue('{order:42}:stock')).toBe('app:queue:{Torder:42}:{order:42}:stock');
  });

  it('cluster: a resource without a hash tag is tagged H<sha1 of its name>, one tag for all its keys', () => {
    const keys = new KeyLayout('app:', true);
    const tag = `{H${sha1('order:42')}}`;
    expect([keys.lock('order:42'), keys.fence('order:42'), keys.queueDeadlines('order:42')]).toEqual([
      `app:lock:${tag}:order:42`,
      `app:fence:${tag}:order:42`,
      `app:queue-deadlines:${tag}:order:42`,
    ]);
    expect(keys.lock('{}x')).toBe(`app:lock:{H${sha1('{}x')}}:{}x`);
  });

  it('cluster: refuses a prefix with braces (it would set the hash tag); plain takes it', () => {
    expect(() => new KeyLayout('{app}:', true)).toThrow('Expected `prefix` to be a prefix without braces when a node is a Redis Cluster');
    expect(new KeyLayout('{app}:', false).lock('r')).toBe('{app}:lock:r');
  });

  it('forLock: the key list of each script, with fencing and fair waiting on', () => {
    const keys = new KeyLayout('p:', false).forLock(['a', 'b'], true, true);
    const queues = ['p:queue:a', 'p:queue-deadlines:a', 'p:queue:b', 'p:queue-deadlines:b'];
    expect(keys.locks).toEqual(['p:lock:a', 'p:lock:b']);
    expect(keys.confirm()).toEqual(['p:lock:a', 'p:lock:b', 'p:fence:a', 'p:fence:b']);
    expect(keys.queues()).toEqual(queues);
  });

  it('forLock: no fence keys without fencing, no queue keys without fair waiting', () => {
    const keys = new KeyLayout('p:', false).forLock(['a'], false, false);
    expect([keys.locks, keys.confirm(), keys.queues()]).toEqual([['p:lock:a'], ['p:lock:a'], []]);
  });

  // ACQUIRE and RELEASE are sent the lock keys only and build the others by this rule.
  it.each([
    ['plain', 'redlock:', false],
    ['cluster', 'redlock:', true],
    ['plain, a prefix of multi-byte characters and "lock:"', 'ü-lock:', false],
    ['cluster, a prefix of multi-byte characters', 'ü:', true],
  ])(
    '%s: every key of a resource is the prefix (prefixLength bytes), its kind, then what follows "<prefix>lock:"',
    (_, prefix, cluster) => {
      const layout = new KeyLayout(prefix, cluster);
      expect(layout.prefixLength).toBe(Buffer.byteLength(prefix));
      for (const resource of ['r', '{o:1}:x', 'lock:ü:{}']) {
        const lock = Buffer.from(layout.lock(resource));
        const built = (kind: string) =>
          `${lock.subarray(0, layout.prefixLength).toString()}${kind}:${lock.subarray(layout.prefixLength + 5).toString()}`;
        expect(lock.subarray(layout.prefixLength, layout.prefixLength + 5).toString()).toBe('lock:');
        expect([built('fence'), built('queue'), built('queue-deadlines')]).toEqual([
          layout.fence(resource),
          layout.queue(resource),
          layout.queueDeadlines(resource),
        ]);
      }
    },
  );

  it('forLock on a cluster: the resources of one lock must share a hash tag', () => {
    const layout = new KeyLayout('p:', true);
    expect(layout.forLock(['{o:1}:stock', '{o:1}:payment'], true, false).locks).toEqual([
      'p:lock:{To:1}:{o:1}:stock',
      'p:lock:{To:1}:{o:1}:payment',
    ]);
    expect(layout.forLock(['untagged'], true, true).locks).toEqual([layout.lock('untagged')]);
    expect(() => layout.forLock(['{o:1}:stock', '{o:2}:stock'], true, false)).toThrow('names sharing one hash tag');
    expect(() => layout.forLock(['a', 'b'], true, false)).toThrow('names sharing one hash tag');
    // Plain nodes take any mix.
    expect(new KeyLayout('p:', false).forLock(['{o:1}:x', 'y'], false, false).locks).toEqual(['p:lock:{o:1}:x', 'p:lock:y']);
  });
});

describe('KeyLayout for listing', () => {
  it('escapes the prefix in the SCAN pattern and reads the resource back from a lock key', () => {
    const plain = new KeyLayout('app*[1]:', false);
    expect(plain.lockPattern('orders:*')).toBe('app\\*\\[1\\]:lock:orders:*');
    expect(plain.resourceOfLockKey(plain.lock('orders:{7}:x'))).toBe('orders:{7}:x');
    expect(plain.resourceOfLockKey('other:lock:x')).toBeUndefined();
    const cluster = new KeyLayout('app:', true);
    expect(cluster.lockPattern('orders:*')).toBe('app:lock:{*}:orders:*');
    for (const name of ['orders:1', '{order:42}:stock', 'a}:b']) {
      expect(cluster.resourceOfLockKey(cluster.lock(name))).toBe(name);
    }
  });
});
