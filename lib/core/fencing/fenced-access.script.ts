import { defineScript, tuple, integer } from '../script.js';

/**
 * Fenced store access: check the caller's fencing token against the highest one
 * seen for this key and record it, then read or write, all atomically. Reads
 * are checked too: otherwise a new holder could read, a stale holder write, and
 * the new holder overwrite on the basis of what it read.
 * KEYS: data key, token key. ARGV: token, 'get' | 'set' | 'del', value (set).
 * Returns {1, value-or-false} when accepted, {0, highest token seen} when stale.
 */
export const FENCED_ACCESS = defineScript(
  'fenced-access',
  `
local token = tonumber(ARGV[1])
local seen = tonumber(redis.call('GET', KEYS[2]) or '0')
if token < seen then
  return {0, string.format('%.0f', seen)}
end
if token > seen then
  redis.call('SET', KEYS[2], ARGV[1])
end
if ARGV[2] == 'set' then
  redis.call('SET', KEYS[1], ARGV[3])
  return {1, false}
elseif ARGV[2] == 'del' then
  redis.call('DEL', KEYS[1])
  return {1, false}
end
return {1, redis.call('GET', KEYS[1])}
`,
  {
    argv: (args: { token: number; op: 'get' | 'del' } | { token: number; op: 'set'; value: string }) =>
      args.op === 'set' ? [String(args.token), args.op, args.value] : [String(args.token), args.op],
    decode: (reply): { accepted: true; value: string | null } | { accepted: false; highest: number } => {
      const [accepted, result] = tuple(reply, 2);
      return integer(accepted) === 1 ? { accepted: true, value: result as string | null } : { accepted: false, highest: Number(result) };
    },
  },
);
