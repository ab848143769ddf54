import { describe, expect, it } from '@jest/globals';
import { checkKey, resolveKey } from '../../lib/nest/lock-key.js';

// Pure: no server. The encoding of placeholder values (issue 18 item 9).
const key = (template: string, ...args: unknown[]) => resolveKey(template, { args })[0];

describe('@Locked template keys', () => {
  it('keep the keys of plain ids: letters, digits, -, _ and . are not encoded', () => {
    expect(key('order:{args.0}', 42)).toBe('order:42');
    expect(key('user:{args.0}', '3f2a9c1e-77b0-4b8e-9a51-0c1d2e3f4a5b')).toBe('user:3f2a9c1e-77b0-4b8e-9a51-0c1d2e3f4a5b');
    expect(key('tenant:{args.0}:order:{args.1}', 'acme_eu.2', 'ord-7')).toBe('tenant:acme_eu.2:order:ord-7');
    expect(key('city:{args.0}', 'Zürich')).toBe('city:Zürich');
  });

  it('give distinct keys to distinct value tuples: separators inside values are encoded', () => {
    const one = key('tenant:{args.0}:order:{args.1}', 'a', 'b:order:c');
    const other = key('tenant:{args.0}:order:{args.1}', 'a:order:b', 'c');
    expect(one).toBe('tenant:a:order:b%3Aorder%3Ac');
    expect(other).toBe('tenant:a%3Aorder%3Ab:order:c');
    expect(key('{args.0}', '50%')).toBe('50%25');
    expect(key('{args.0}', 'a b/c')).toBe('a%20b%2Fc');
  });

  it("encode a separator made of kept characters in that template's values: '{a}-{b}'", () => {
    expect(key('{args.0}-{args.1}', 'a-b', 'c')).toBe('a%2Db-c');
    expect(key('{args.0}-{args.1}', 'a', 'b-c')).toBe('a-b%2Dc');
  });

  it('refuse templates whose placeholders cannot be told apart', () => {
    expect(() => checkKey('{args.0}{args.1}')).toThrow('placeholders are apart');
    expect(() => checkKey('{args.0}%{args.1}')).toThrow('placeholders are apart');
    expect(() => checkKey('{args.0}:{args.1}')).not.toThrow();
  });
});
