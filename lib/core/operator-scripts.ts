import { GRANT } from './grant-lua.js';
import { HELPERS, WAKE } from './permit-scripts.js';
import { SLOT_LUA } from './slot-scripts.js';
import { defineScript, integer, tuple } from './script.js';

// The operators' scripts: what a node holds of one resource (INSPECT) and the
// eviction of one holder (FORCE_RELEASE). Each reads the lock key's type
// first, so that one call serves a mutex (a string: the holder's value) and a
// semaphore or read-write lock (a sorted set of permits, see
// permit-scripts.ts) alike, whatever each node holds. Neither sends a lock
// value back: a holder is named by its fingerprint, the first 12 hex digits of
// its value's SHA-1 (a writer's ':w' left out), and by the identity part of
// the value (from its first '.'), never by the random part.

/** Lua: a member's value (a writer's ':w' left out), its fingerprint and its identity part. */
const HOLDER = `
local function valueOf(member)
  if string.sub(member, -2) == ':w' then return string.sub(member, 1, -3), 1 end
  return member, 0
end
local function fingerprint(value)
  return string.sub(redis.sha1hex(value), 1, 12)
end
local function identityOf(value)
  return string.match(value, '%..*$') or false
end
`;

/**
 * Lua: a semaphore's slots (see slot-scripts.ts), found from its resource's lock key
 * (where its marker, '#<limit>', is), the key prefix's length and the limit: per slot
 * held, {slot, value}.
 */
const SLOTS = `
local function slotKey(lockKey, p, kind, slot)
  return string.sub(lockKey, 1, p) .. kind .. '#' .. slot .. ':' .. string.sub(lockKey, p + 6)
end
local function heldSlots(lockKey, p, limit)
  local held = {}
  for i = 0, tonumber(limit) - 1 do
    local v = redis.call('GET', slotKey(lockKey, p, 'lock', i))
    if v then table.insert(held, {i, v}) end
  end
  return held
end
`;

/** One holder in a node's INSPECT reply. */
export interface InspectedHolder {
  /** The fingerprint of the holder's value. */
  readonly holder: string;
  /** The identity part of the value (`.` and what follows), if it has one. */
  readonly identity?: string;
  /** Remaining ttl of this holder's key (a mutex) or permit, ms. */
  readonly ttl: number;
  /** A permit taken with `mode: 'write'`. */
  readonly writer: boolean;
}

/** One node's INSPECT reply. */
export interface InspectReply {
  /** `mutex`, the kind a permits' resource is stored with ('rw'; a semaphore's: its limit, '3'), '' for permits without one; undefined: no key. */
  readonly kind?: string;
  readonly counter: string | null;
  readonly waiters: number;
  /** The live holders: the mutex's one, or every permit that has not run out. */
  readonly holders: readonly InspectedHolder[];
}

/**
 * What a node knows of one resource, for operators: read-only (a permit that
 * ran out is skipped, not removed).
 * KEYS: lock key, fence counter, queue, kind; optionally the queue's deadlines.
 * Returns {kind or false, counter or false, waiters (with the deadlines, not
 * counting permit holders' places, see permit-scripts.ts), {fingerprint, identity or
 * false, ttl ms, writer 1/0, ...}}, kind being 'mutex' for a string key, the
 * kind key's value ('' if none) for a sorted set, false for no key.
 */
export const INSPECT = defineScript(
  'inspect',
  `${HELPERS}${HOLDER}${SLOTS}
local counter, waiters = redis.call('GET', KEYS[2]), redis.call('ZCARD', KEYS[3])
if KEYS[5] then
  for _, v in ipairs(redis.call('HVALS', KEYS[5])) do
    if tonumber(v) < 0 then waiters = waiters - 1 end
  end
end
local kind, holders = false, {}
local t = redis.call('TYPE', KEYS[1])['ok']
local value = t == 'string' and redis.call('GET', KEYS[1])
-- A semaphore's marker at the lock key ('#<limit>', see slot-scripts.ts).
if value and string.byte(value, 1) == 35 then t = 'slots' end
if t == 'string' then
  kind = 'mutex'
  holders = {fingerprint(value), identityOf(value), redis.call('PTTL', KEYS[1]), 0}
elseif t == 'zset' then
  local now = clock()
  kind = redis.call('GET', KEYS[4]) or ''
  local live = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf', 'WITHSCORES')
  for i = 1, #live, 2 do
    local value, writer = valueOf(live[i])
    for _, x in ipairs({fingerprint(value), identityOf(value), tonumber(live[i + 1]) - now, writer}) do
      table.insert(holders, x)
    end
  end
elseif t == 'slots' then
  -- A semaphore's: each slot held is a holder; each slot's queue holds waiters.
  kind = string.sub(value, 2)
  if ARGV[1] then
    local limit, p = kind, tonumber(ARGV[1])
    local held = heldSlots(KEYS[1], p, limit)
    for _, slot in ipairs(held) do
      local key = slotKey(KEYS[1], p, 'lock', slot[1])
      for _, x in ipairs({fingerprint(slot[2]), identityOf(slot[2]), redis.call('PTTL', key), 0}) do
        table.insert(holders, x)
      end
    end
    for i = 0, tonumber(limit) - 1 do waiters = waiters + redis.call('ZCARD', slotKey(KEYS[1], p, 'queue', i)) end
  end
end
return {kind, counter, waiters, holders}
`,
  {
    argv: (args: { prefixLength: number }) => [String(args.prefixLength)],
    decode: (reply): InspectReply => {
      const [kind, counter, waiters, flat] = tuple(reply, 4);
      const list = flat as unknown[];
      const holders: InspectedHolder[] = [];
      for (let i = 0; i + 3 < list.length; i += 4) {
        holders.push({
          holder: list[i] as string,
          identity: (list[i + 1] as string | null) ?? undefined,
          ttl: integer(list[i + 2]),
          writer: integer(list[i + 3]) === 1,
        });
      }
      return { kind: (kind as string | null) ?? undefined, counter: counter as string | null, waiters: integer(waiters), holders };
    },
  },
);

/** FORCE_RELEASE's arguments. */
export interface ForceReleaseArgs {
  /** Only the holder with this fingerprint (see `fingerprint`) is evicted; `undefined`: whoever holds it (one permit's holder at most). */
  readonly holder?: string;
  /** Fencing on: the counter is raised above its value and at least to `floor` (µs), kept `retention` ms. */
  readonly fencing?: { readonly floor: number; readonly retention: number };
  /** The wake channel prefix: the waiters the eviction makes room for are woken, as by a release. */
  readonly wakePrefix: string;
  /** The key prefix's length in bytes: a semaphore's slots are found from the lock key with it. */
  readonly prefixLength: number;
}

/** One node's FORCE_RELEASE reply. */
export interface ForceReleaseReply {
  /**
   * `released`: the holder's key or permit was there and is deleted; `free`: no holder; `other-holder`: another holder
   * than the one named (left alone); `several`: no holder named, and several permits' holders (left alone).
   */
  readonly outcome: 'released' | 'free' | 'other-holder' | 'several';
  /** The fencing counter after the raise (fencing on). */
  readonly counter?: number;
  /** `released`: the evicted value's fingerprint and its identity part (`.` and what follows; not the secret). */
  readonly holder?: string;
  readonly identity?: string;
  /** As INSPECT's: 'mutex', a permits' kind ('3', 'rw'), undefined when there was no key. */
  readonly kind?: string;
  /** `released`: the evicted permit was a writer's. */
  readonly writer: boolean;
}

/**
 * An operator evicts one holder of one resource: a mutex's lock key is
 * deleted whatever value it holds (or only when the value's fingerprint is
 * ARGV[1]) and its first waiter woken; a permit (a semaphore's or a
 * read-write lock's) is removed only when named by its fingerprint, or when it
 * is the only one, and every waiter it makes room for is woken, in queue order,
 * as PERMIT_RELEASE does. Then the fencing counter is raised above every token
 * issued so far: the next holder's token, and the token returned to the
 * operator, are above the evicted holder's, so a fenced store that has seen
 * either refuses the evicted holder. The counter is raised on a node without
 * the holder too: the evicted holder's token may have been drawn there.
 * KEYS: lock key, fence counter, queue, queue deadlines, kind.
 * ARGV: holder fingerprint ('' = any), counter floor in µs ('' = fencing off),
 * counter retention ms, wake prefix.
 * Returns {1 released | 0 free | -1 other holder | -2 several holders, the
 * raised counter or false, the evicted value's fingerprint and its identity
 * part (both false unless released), the kind (as INSPECT's), writer 1/0}.
 */
export const FORCE_RELEASE = defineScript(
  'force-release',
  `${HELPERS}${WAKE}${HOLDER}${SLOTS}${GRANT}${SLOT_LUA}
local wanted = ARGV[1]
local released, holder, identity, kind, writer = 0, false, false, false, 0
local t = redis.call('TYPE', KEYS[1])['ok']
local value = t == 'string' and redis.call('GET', KEYS[1])
-- A semaphore's marker at the lock key ('#<limit>', see slot-scripts.ts).
if value and string.byte(value, 1) == 35 then t = 'slots' end
if t == 'string' then
  kind = 'mutex'
  if wanted ~= '' and fingerprint(value) ~= wanted then return {-1, false, false, false, kind, 0} end
  redis.call('DEL', KEYS[1])
  released, holder, identity = 1, fingerprint(value), identityOf(value)
  local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if head then redis.pcall('PUBLISH', ARGV[4] .. string.match(head, '^[^.]*'), head) end -- pcall: see GRANT in scripts.ts
elseif t == 'zset' then
  local now = clock()
  kind = redis.call('GET', KEYS[5]) or ''
  heldWeight(KEYS[1], now)
  local members = redis.call('ZRANGE', KEYS[1], 0, -1)
  local found
  for _, m in ipairs(members) do
    if wanted == '' or fingerprint(valueOf(m)) == wanted then found = m end
  end
  if wanted == '' and #members > 1 then return {-2, false, false, false, kind, 0} end
  if not found and #members > 0 then return {-1, false, false, false, kind, 0} end
  if found then
    redis.call('ZREM', KEYS[1], found)
    local value, w = valueOf(found)
    released, holder, identity, writer = 1, fingerprint(value), identityOf(value), w
    wake(KEYS[3], KEYS[4], now, heldWeight(KEYS[1], now), ARGV[4], '')
  end
elseif t == 'slots' then
  -- A semaphore's: a slot's holder, named, or the only one; its slot's first waiter is woken.
  kind = string.sub(value, 2)
  if ARGV[5] then
    local p = tonumber(ARGV[5])
    local held = heldSlots(KEYS[1], p, kind)
    if wanted == '' and #held > 1 then return {-2, false, false, false, kind, 0} end
    local found
    for _, slot in ipairs(held) do
      if wanted == '' or fingerprint(slot[2]) == wanted then found = slot end
    end
    if not found and #held > 0 then return {-1, false, false, false, kind, 0} end
    if found then
      redis.call('DEL', slotKey(KEYS[1], p, 'lock', found[1]))
      released, holder, identity = 1, fingerprint(found[2]), identityOf(found[2])
      -- As a release: the slot's first waiter is woken, or another slot's (the marker goes with the last permit).
      local base, rest, tag = string.sub(KEYS[1], 1, p), string.sub(KEYS[1], p + 6), '#' .. found[1]
      local head = firstFresh(base .. 'queue' .. tag .. ':' .. rest, base .. 'queue-deadlines' .. tag .. ':' .. rest, base .. 'handover' .. tag .. ':' .. rest)
      if head then
        redis.pcall('PUBLISH', ARGV[4] .. string.match(head, '^[^.]*'), head) -- pcall: see GRANT
      else
        slotFreed(base, rest, tag, firstFresh)
      end
    end
  end
end
if ARGV[2] == '' then
  return {released, false, holder, identity, kind, writer}
end
local floor = tonumber(ARGV[2])
local counter = tonumber(redis.call('GET', KEYS[2]) or '0')
if counter >= floor then floor = counter + 1 end
-- string.format keeps all digits: Redis would print a large number in exponent form.
local text = string.format('%.0f', floor)
redis.call('SET', KEYS[2], text, 'PX', ARGV[3])
return {released, text, holder, identity, kind, writer}
`,
  {
    argv: ({ holder, fencing, wakePrefix, prefixLength }: ForceReleaseArgs) => [
      holder ?? '',
      fencing ? String(fencing.floor) : '',
      fencing ? String(fencing.retention) : '',
      wakePrefix,
      String(prefixLength),
    ],
    decode: (reply): ForceReleaseReply => {
      const [released, counter, holder, identity, kind, writer] = tuple(reply, 6);
      const outcome = OUTCOMES[String(released)];
      if (!outcome) throw new Error(`unexpected reply ${String(released)}`);
      return {
        outcome,
        counter: counter === null ? undefined : Number(counter),
        holder: (holder as string | null) ?? undefined,
        identity: (identity as string | null) ?? undefined,
        kind: (kind as string | null) ?? undefined,
        writer: integer(writer) === 1,
      };
    },
  },
);

const OUTCOMES: Record<string, ForceReleaseReply['outcome']> = { '1': 'released', '0': 'free', '-1': 'other-holder', '-2': 'several' };
