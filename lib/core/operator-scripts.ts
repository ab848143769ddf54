import { defineScript, tuple } from './script.js';

/** FORCE_RELEASE's arguments. */
export interface ForceReleaseArgs {
  /** Only the holder with this fingerprint (see `fingerprint`) is evicted; `undefined`: whoever holds it. */
  readonly holder?: string;
  /** Fencing on: the counter is raised above its value and at least to `floor` (µs), kept `retention` ms. */
  readonly fencing?: { readonly floor: number; readonly retention: number };
  /** The wake channel prefix: the first waiter is woken, as by a release. */
  readonly wakePrefix: string;
}

/** One node's FORCE_RELEASE reply. */
export interface ForceReleaseReply {
  /** `released`: the key was there and is deleted; `free`: no key; `other-holder`: another holder than the one named (left alone). */
  readonly outcome: 'released' | 'free' | 'other-holder';
  /** The fencing counter after the raise (fencing on). */
  readonly counter?: number;
  /** `released`: the evicted value's fingerprint and its identity part (`.` and what follows; not the secret). */
  readonly holder?: string;
  readonly identity?: string;
}

/**
 * An operator evicts the holder of one resource: its lock key is deleted
 * whatever value it holds (or only when the value's fingerprint, the first 12
 * hex digits of its SHA-1, is ARGV[1]), the first waiter is woken, and the
 * fencing counter is raised above every token issued so far: the next holder's
 * token, and the token returned to the operator, are above the evicted
 * holder's, so a fenced store that has seen either refuses the evicted holder.
 * The counter is raised on a node without the key too: the evicted holder's
 * token may have been drawn there.
 * KEYS: lock key, fence counter, queue. ARGV: holder fingerprint ('' = any),
 * counter floor in µs ('' = fencing off), counter retention ms, wake prefix.
 * Returns {1 released | 0 free | -1 other holder, the raised counter or false,
 * the evicted value's fingerprint and its identity part (after the random
 * part's end, the first '.'), both false unless released}.
 */
export const FORCE_RELEASE = defineScript(
  'force-release',
  `
local value = redis.call('GET', KEYS[1])
if value and ARGV[1] ~= '' and string.sub(redis.sha1hex(value), 1, 12) ~= ARGV[1] then
  return {-1, false, false, false}
end
local released, holder, identity = 0, false, false
if value then
  redis.call('DEL', KEYS[1])
  released = 1
  holder = string.sub(redis.sha1hex(value), 1, 12)
  identity = string.match(value, '%..*$') or false
  local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if head then redis.call('PUBLISH', ARGV[4] .. string.match(head, '^[^.]*'), head) end
end
if ARGV[2] == '' then
  return {released, false, holder, identity}
end
local floor = tonumber(ARGV[2])
local counter = tonumber(redis.call('GET', KEYS[2]) or '0')
if counter >= floor then floor = counter + 1 end
-- string.format keeps all digits: Redis would print a large number in exponent form.
local text = string.format('%.0f', floor)
redis.call('SET', KEYS[2], text, 'PX', ARGV[3])
return {released, text, holder, identity}
`,
  {
    argv: ({ holder, fencing, wakePrefix }: ForceReleaseArgs) => [
      holder ?? '',
      fencing ? String(fencing.floor) : '',
      fencing ? String(fencing.retention) : '',
      wakePrefix,
    ],
    decode: (reply): ForceReleaseReply => {
      const [released, counter, holder, identity] = tuple(reply, 4);
      const outcome = released === 1 ? 'released' : released === 0 ? 'free' : released === -1 ? 'other-holder' : undefined;
      if (!outcome) throw new Error(`unexpected reply ${String(released)}`);
      return {
        outcome,
        counter: counter === null ? undefined : Number(counter),
        holder: (holder as string | null) ?? undefined,
        identity: (identity as string | null) ?? undefined,
      };
    },
  },
);
