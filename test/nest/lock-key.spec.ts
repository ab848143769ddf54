import { describe, expect, it } from '@jest/globals';
import { afterPipes, checkKey, resolveKey, type RouteArgs } from '../../lib/nest/lock-key.js';

// Pure: no server. The encoding of placeholder values (issue 18 item 9), what a key reads, and when a key is refused.
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

describe('resolveKey', () => {
  it('takes a static name, a list of names or templates, and a function of the call', () => {
    const context = { args: [{ id: 7 }], params: { id: '42' } };
    expect(resolveKey('reports', context)).toEqual(['reports']);
    expect(resolveKey(['order:{params.id}', 'job:{args.0.id}'], context)).toEqual(['order:42', 'job:7']);
    expect(resolveKey(({ params }) => `order:${String(params?.id)}`, context)).toEqual(['order:42']);
    expect(resolveKey(({ args }) => ['a', `b:${(args[0] as { id: number }).id}`], context)).toEqual(['a', 'b:7']);
  });

  it('reads the request parts and a trimmed path: {params.id}, { query.page }, {user.tenant}, {data.0}', () => {
    const context = { args: [], params: { id: 1 }, query: { page: 2 }, user: { tenant: 'acme' }, data: ['x'], headers: { 'x-k': true } };
    expect(resolveKey('{params.id}/{ query.page }/{user.tenant}/{data.0}/{headers.x-k}', context)).toEqual(['1/2/acme/x/true']);
  });

  it('refuses a placeholder with nothing usable in the call, naming it', () => {
    const context = { args: [{ id: '' }, { nested: {} }, null] };
    expect(() => resolveKey('order:{params.id}', context)).toThrow(
      'Expected `@Locked key {params.id}` to be a string, number or boolean in the call, got undefined',
    );
    expect(() => resolveKey('{args.0.id}', context)).toThrow('`@Locked key {args.0.id}`');
    expect(() => resolveKey('{args.1.nested}', context)).toThrow('got an object (Object)');
    expect(() => resolveKey('{args.2}', context)).toThrow('got null');
    expect(() => resolveKey('{args.2.deeper}', context)).toThrow('got undefined');
  });
});

describe('checkKey', () => {
  it('takes a string, a non-empty list of strings, or a function', () => {
    expect(() => checkKey('a')).not.toThrow();
    expect(() => checkKey(['a', '{args.0}'])).not.toThrow();
    expect(() => checkKey(() => 'a')).not.toThrow();
  });

  it('refuses anything else, saying what was expected', () => {
    const expected = 'Expected `@Locked key` to be a non-empty string, an array of them, or a function';
    for (const bad of ['', [], ['a', ''], ['a', 1], 42, undefined, {}]) expect(() => checkKey(bad)).toThrow(expected);
  });
});

describe('afterPipes', () => {
  const request = { params: { id: '42', other: 'x' }, query: { q: 'raw' }, body: { raw: true }, headers: { h: '1' } };

  it("http: a @Param('id') argument replaces that one param; @Body() and @Query() replace the whole part", () => {
    // ROUTE_ARGS_METADATA keys are '<paramtype>:<index>': 5 PARAM, 3 BODY, 4 QUERY.
    const routeArgs: RouteArgs = { '5:0': { index: 0, data: 'id' }, '3:1': { index: 1 }, '4:2': { index: 2 } };
    const args = [42, { dto: 1 }, { q: 'piped' }];
    const context = afterPipes('http', request, args, routeArgs);
    expect(context.args).toBe(args);
    expect(context.params).toEqual({ id: 42, other: 'x' });
    expect(context.body).toEqual({ dto: 1 });
    expect(context.query).toEqual({ q: 'piped' });
    expect(context.headers).toBe(request.headers);
    expect(request.params.id).toBe('42'); // the request itself is left alone
  });

  it('rpc and ws: @Payload() replaces data', () => {
    for (const type of ['rpc', 'ws']) {
      const context = afterPipes(type, { data: 'raw' }, ['parsed'], { '3:0': { index: 0 } });
      expect(context.data).toBe('parsed');
    }
  });

  it('leaves the request as it is without route args, for other kinds of call, and for other param types', () => {
    expect(afterPipes('http', request, [1], undefined)).toEqual({ ...request, args: [1] });
    expect(afterPipes('graphql', request, [1], { '5:0': { index: 0, data: 'id' } }).params).toBe(request.params);
    // 0 REQUEST, a custom decorator's key: not a request part.
    expect(afterPipes('http', request, [1, 2], { '0:0': { index: 0 }, 'custom__:1': { index: 1 } })).toEqual({ ...request, args: [1, 2] });
  });
});
