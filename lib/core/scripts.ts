import type { AcquireArgs, AcquireReply } from './acquire-contract.js';
import { FORCE_RELEASE, INSPECT } from './operator-scripts.js';
import { AT_LEAST, PERMIT_SCRIPTS } from './permit-scripts.js';
import { defineScript, integer, tuple, type Script } from './script.js';
import { SLOT_EXTEND, SLOT_LUA } from './slot-scripts.js';
import { GRANT } from './grant-lua.js';
import { ACQUIRE_FAST, RELEASE_FAST } from './fast-path-lua.js';

export { SET_NX, type AcquireArgs, type AcquireReply, type FairWaiting } from './acquire-contract.js';
export { SLOT_EXTEND } from './slot-scripts.js';
export { FENCED_ACCESS } from './fencing/fenced-access.script.js';
export { runScript, sendScript, type Done, type Script, type ScriptRunner } from './script.js';
export { FORCE_RELEASE, INSPECT, type ForceReleaseArgs, type ForceReleaseReply, type InspectReply } from './operator-scripts.js';

/**
 * Take every lock key, or none, respecting the wait queue.
 * KEYS: the n lock keys, nothing else. ARGV: value, ttl ms, the queue spec
 * ('' = fair waiting off; '-' = on, without joining the queue; else 'waiter-id
 * first-attempt-ms entry-ttl-ms attempt', joining it when refused); then, when fencing
 * or fair waiting is on, the key prefix's length in bytes; then, only when
 * fencing is on, the counters' retention ms and the acquiring client's clock in
 * µs. A resource's other keys (its fence counter, queue and queue deadlines) are
 * its lock key with `lock:` after the prefix changed to their kind: built here,
 * not sent. Every argument costs on both ends (ioredis encodes it for each node,
 * the server makes a Lua string of it): three keys fewer per resource, and the
 * layout told by the counts instead of by flags. With a Redis Cluster node the
 * built keys carry the lock key's hash tag (see KeyLayout), so they are in its
 * slot, which a script may use without declaring them.
 * Returns {1, token} when taken (token 0 without fencing); {0, -1} when a key
 * is held by another value (as SET NX's refusal: no PTTL, which the retry does
 * not use); {0, -3} when the resource is free but reserved for an earlier waiter;
 * {0, -1, {slot, ...}} when a semaphore's slot is refused and others are named to
 * move to (free ones, or shorter queues: see slot-scripts.ts).
 * The usual call (one free resource, nobody queued) ends in ACQUIRE_FAST, at the head.
 */
export const ACQUIRE = defineScript(
  'acquire',
  `${ACQUIRE_FAST}${AT_LEAST}${SLOT_LUA}
local value = ARGV[1]
local spec = ARGV[3]
local fair = spec ~= ''
local retention = ARGV[5]
if retention == '' then retention = nil end
-- A semaphore's slot (a lock key \`<prefix>lock#<slot>:\`): the semaphore's limit.
local limit = ARGV[7]
local n = #KEYS
local q0 = n
if retention then q0 = 2 * n end
-- K: the lock keys, then (fencing on) the n fence counters, then (fair waiting
-- on) each resource's queue and queue deadlines, then each one's hand-overs.
local K = KEYS
-- A slot's: its lock key's tag ('#<slot>'), and the resource's part of its keys.
local tag, base, rest
if ARGV[4] then
  local p = tonumber(ARGV[4])
  base = string.sub(KEYS[1], 1, p)
  K = {}
  for i = 1, n do
    -- What follows the kind ('lock', or a slot's 'lock#<slot>') and its ':'. A slot's
    -- queue keys are its own; the fence counter is the resource's, one for every slot.
    local c = string.find(KEYS[i], ':', p + 5, true)
    tag, rest = string.sub(KEYS[i], p + 5, c - 1), string.sub(KEYS[i], c + 1)
    K[i] = KEYS[i]
    if retention then K[n + i] = base .. 'fence:' .. rest end
    if fair then
      K[q0 + 2 * i - 1] = base .. 'queue' .. tag .. ':' .. rest
      K[q0 + 2 * i] = base .. 'queue-deadlines' .. tag .. ':' .. rest
      K[q0 + 2 * n + i] = base .. 'handover' .. tag .. ':' .. rest
    end
  end
end
if limit then
  local other = otherKind(base, rest, limit)
  if other then return redis.error_reply('WRONGKIND ' .. other) end
end
-- The waiter's id, first-attempt time, entry ttl and attempt number, read from
-- the spec only on the paths that need them (a queue that is not empty, or joining it).
local waiter, since, entryTtl, attempt
-- If every key already holds this value, an earlier run took them (ioredis may
-- send a command twice after a reconnect, or an earlier attempt's undo was lost
-- with its connection): answer the same without raising counters, and set them
-- again below, so that they expire a ttl after this attempt began, not before.
local mine = 0
local blocker, blockedBy
-- One resource (the usual case): SET NX first, one call when the key is free;
-- undone below if the resource turns out to be reserved.
local taken = false
if n == 1 then
  if redis.call('SET', K[1], value, 'NX', 'PX', ARGV[2]) then
    taken = true
  else
    local v = redis.call('GET', K[1])
    if v == value then
      mine = 1
    else
      blocker, blockedBy = 1, v
    end
  end
else
  for i = 1, n do
    local v = redis.call('GET', K[i])
    if v == value then
      mine = mine + 1
    elseif v then
      blocker, blockedBy = i, v
      break
    end
  end
end
-- A semaphore's marker at a mutex's key (see slot-scripts.ts): the resource is in use
-- as a semaphore, typed. Read only where the key refused: a free key costs nothing more.
if blockedBy and not limit and string.byte(blockedBy, 1) == 35 then
  return redis.error_reply('WRONGKIND ' .. string.sub(blockedBy, 2))
end
-- The server's clock in ms, read only on the paths that need it.
local now
-- A free resource is reserved for the longest waiter whose entry is still fresh:
-- the process that just released cannot take it straight back.
local reserved = false
if fair and not blocker and mine < n then
  for i = 1, n do
    local q, d = K[q0 + 2 * i - 1], K[q0 + 2 * i]
    local head = redis.call('ZRANGE', q, 0, 0)[1]
    if head and spec ~= '-' and not waiter then
      waiter, since, entryTtl, attempt = string.match(spec, '^(%S+) (%S+) (%S+) (%S+)$')
    end
    while head and head ~= waiter do
      if not now then
        local t = redis.call('TIME')
        now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
      end
      if tonumber(redis.call('HGET', d, head) or '0') >= now then
        reserved = true
        break
      end
      redis.call('ZREM', q, head)
      redis.call('HDEL', d, head)
      redis.call('HDEL', K[q0 + 2 * n + i], head)
      head = redis.call('ZRANGE', q, 0, 0)[1]
    end
    if reserved then break end
  end
  if reserved and taken then redis.call('DEL', K[1]) end
end
if blocker or reserved then
  if fair and spec ~= '-' then
    if not waiter then waiter, since, entryTtl, attempt = string.match(spec, '^(%S+) (%S+) (%S+) (%S+)$') end
    if not now then
      local t = redis.call('TIME')
      now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    -- The client's clock orders the queue (one order on every node), within a
    -- second of this node's: a host whose clock is off cannot queue ahead of, or
    -- behind, every other waiter for good.
    local at = tonumber(since)
    if at < now - 1000 then since = now - 1000 elseif at > now + 1000 then since = now + 1000 end
    for i = 1, n do
      local q, d = K[q0 + 2 * i - 1], K[q0 + 2 * i]
      redis.call('ZADD', q, 'NX', since, waiter)
      redis.call('HSET', d, waiter, now + tonumber(entryTtl))
      atLeast(q, entryTtl)
      atLeast(d, entryTtl)
    end
    -- A waiter for one resource leaves what a release needs to hand the lock over
    -- to it (see GRANT): ttl, attempt, counter retention and floor ('0 0' with
    -- fencing off), the kind of lock ('m', a mutex), value. In a hash of its own: the deadlines stay numbers, as
    -- an earlier version's scripts, still running on another process during a
    -- rolling deploy, read them.
    if n == 1 then
      local h = K[q0 + 3]
      redis.call('HSET', h, waiter, ARGV[2] .. ' ' .. attempt .. ' ' .. (retention or '0') .. ' ' .. (retention and ARGV[6] or '0') .. ' m ' .. value)
      atLeast(h, entryTtl)
    end
  end
  -- A slot held by another: the others free here, named (it stays queued here until it
  -- moves); with none free, those with a queue much shorter for this waiter.
  if blocker and limit then
    local free = freeSlots(base, rest, tag, limit)
    if #free == 0 and waiter then free = shorterQueues(base, rest, tag, limit, waiter, since) end
    if #free > 0 then return {0, -1, free} end
  end
  if blocker then return {0, -1} end
  return {0, -3}
end
if limit then keepMark(base .. 'lock:' .. rest, limit, ARGV[2]) end
if not taken then
  for i = 1, n do
    redis.call('SET', K[i], value, 'PX', ARGV[2])
  end
end
-- The waiter stays queued here: if this attempt fails on the quorum, it must
-- keep its place on this node too. It leaves once it holds the lock.
if not retention then
  return {1, 0}
end
if mine == n then
  local token = 0
  for i = n + 1, 2 * n do
    token = math.max(token, tonumber(redis.call('GET', K[i]) or '0'))
  end
  return {1, token}
end
-- Fencing: one token for the lock, above every resource's counter and at least
-- ARGV[6], the acquiring client's clock in µs; every counter is raised to it.
-- The floor is what a missing counter (never used, expired after the retention,
-- or lost in a restart without data) is reborn at: above every token issued
-- before as long as that clock has not stepped back, and the same on every node,
-- so that nodes agree on the token without a write-back round, even those that
-- missed acquisitions.
local counters = {}
for i = n + 1, 2 * n do counters[i - n] = K[i] end
local token = raiseFences(counters, ARGV[6], retention)
return {1, token}
`,
  {
    // Every argument costs on both ends: the layout is told by the counts, not by flags.
    argv: ({ value, ttl, fair, fencing, prefixLength, attempt, limit }: AcquireArgs) => {
      const spec = !fair ? '' : fair.join ? `${fair.join.waiter} ${fair.join.since} ${fair.join.entryTtl} ${attempt ?? 1}` : '-';
      if (limit !== undefined) {
        const [retention, floor] = fencing ? [String(fencing.retention), String(fencing.floor)] : ['', ''];
        return [value, String(ttl), spec, String(prefixLength), retention, floor, String(limit)];
      }
      if (fencing) return [value, String(ttl), spec, String(prefixLength), String(fencing.retention), String(fencing.floor)];
      return fair ? [value, String(ttl), spec, String(prefixLength)] : [value, String(ttl), spec];
    },
    decode: (reply): AcquireReply => {
      // A slot refused with the slots to move to named: {0, -1, {slot, ...}}.
      if (Array.isArray(reply) && reply.length === 3 && Array.isArray(reply[2])) {
        return { taken: false, value: -1, free: reply[2].map(integer) };
      }
      const [taken, value] = tuple(reply, 2);
      return { taken: integer(taken) === 1, value: integer(value) };
    },
  },
);

/**
 * Fencing write-back (phase 2): raise each counter to the lock's token, only
 * while this node still holds the lock's value, so that the raise happens
 * before any later holder's INCR on this node.
 * KEYS: the n lock keys, then the n fence counters. ARGV: value, token, n, retention ms.
 * Returns 1 when held (counters raised), 0 when not held.
 */
export const CONFIRM_TOKEN = defineScript(
  'confirm-token',
  `
local n = tonumber(ARGV[3])
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then return 0 end
end
local token = tonumber(ARGV[2])
for i = n + 1, 2 * n do
  local c = tonumber(redis.call('GET', KEYS[i]) or '0')
  if c < token then
    redis.call('SET', KEYS[i], ARGV[2], 'PX', ARGV[4])
  end
end
return 1
`,
  {
    argv: (args: { value: string; token: number; locks: number; retention: number }) => [
      args.value,
      String(args.token),
      String(args.locks),
      String(args.retention),
    ],
    /** True when held (counters raised). */
    decode: (reply) => integer(reply) === 1,
  },
);

/**
 * Compare-and-pexpire on every key, or none.
 * KEYS: lock keys. ARGV: value, ttl ms. Returns 1 when extended, 0 when any key
 * is not this holder's (an expired lock is never re-created).
 */
export const EXTEND = defineScript(
  'extend',
  `
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then return 0 end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
`,
  {
    argv: (args: { value: string; ttl: number }) => [args.value, String(args.ttl)],
    /** True when extended. */
    decode: (reply) => integer(reply) === 1,
  },
);

export interface ReleaseArgs {
  readonly value: string;
  /**
   * With fair waiting on: the key prefix's length in bytes (the script builds
   * the queue keys and the wake channel from it); the waiter id under which
   * this holder queued, if it did (`leaving`); for an undo, the waiter whose
   * attempt is undone (`undoneBy`, not woken by it); for a semaphore's slot with fencing on, the
   * releaser's fencing floor (`floor`, see `handOverFloor`) for a hand-over's token.
   */
  readonly fair?: { readonly prefixLength: number; readonly leaving?: string; readonly undoneBy?: string; readonly floor?: number };
}

/**
 * Compare-and-delete: delete only the keys that hold this value; where a key
 * was deleted and waiters queue for it, hand it over to the first waiter, or
 * wake it (see GRANT) on its client's channel (`<prefix>wake:` followed by the
 * id's part before the first '.'), without polling. A holder that had queued for the lock
 * leaves the queues here (ARGV[3], absent or '' when it never queued): it
 * stays their head while it holds the lock, which changes nothing (the key
 * refuses everyone), and costs no round of its own.
 * The undo of a waiter's failed attempt names the waiter (ARGV[4]) instead:
 * it keeps its place, and is not woken by its own undo (where the attempt set
 * a key, the waiter is usually the head; waking it would retry at once, and
 * again after that retry's undo, burning its retries in a loop).
 * KEYS: the n lock keys, nothing else (a resource's queue keys are built from
 * its lock key, as in ACQUIRE). ARGV: value; then, only when fair waiting is
 * on, the key prefix's length in bytes, the holder's waiter id (optional), for
 * an undo, the undoing waiter's id (else ''), and the fencing floor of a
 * hand-over (optional, see GRANT). Returns how many keys were deleted.
 * Without fair waiting, or with nobody queued, it ends in RELEASE_FAST, at the head.
 */
export const RELEASE = defineScript(
  'release',
  `${RELEASE_FAST}${GRANT}${SLOT_LUA}
local value = ARGV[1]
local deleted = 0
local p = tonumber(ARGV[2])
local base = string.sub(KEYS[1], 1, p)
local waiter = ARGV[3] or ''
for i = 1, #KEYS do
  -- As ACQUIRE builds them: a semaphore slot's queue keys are its own, its counter the resource's.
  local c = string.find(KEYS[i], ':', p + 5, true)
  local tag, rest = string.sub(KEYS[i], p + 5, c - 1), string.sub(KEYS[i], c + 1)
  local q, d, h = base .. 'queue' .. tag .. ':' .. rest, base .. 'queue-deadlines' .. tag .. ':' .. rest, base .. 'handover' .. tag .. ':' .. rest
  if waiter ~= '' then
    redis.call('ZREM', q, waiter)
    redis.call('HDEL', d, waiter)
    redis.call('HDEL', h, waiter)
  end
  if redis.call('GET', KEYS[i]) == value then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
    local head = firstFresh(q, d, h, ARGV[4])
    if head and head ~= ARGV[4] then
      grant(KEYS[i], base .. 'fence:' .. rest, h, head, base .. 'wake:' .. string.match(head, '^[^.]*'), tag ~= '' and base .. 'lock:' .. rest, ARGV[5])
    elseif not head and tag ~= '' then
      slotFreed(base, rest, tag, firstFresh)
    end
  end
end
return deleted
`,
  {
    argv: ({ value, fair }: ReleaseArgs) => {
      if (!fair) return [value];
      const argv = [value, String(fair.prefixLength)];
      if (fair.floor !== undefined) argv.push(fair.leaving ?? '', fair.undoneBy ?? '', String(fair.floor));
      else if (fair.undoneBy !== undefined) argv.push(fair.leaving ?? '', fair.undoneBy);
      else if (fair.leaving) argv.push(fair.leaving);
      return argv;
    },
    /** How many keys were deleted. */
    decode: (reply) => Number(reply),
  },
);

/**
 * A waiter that gave up leaves the queues. A lock a release handed over to it
 * (GRANT) and it never took up is deleted (its hand-over holds the value). If it was
 * first, or its handed-over key was deleted, the next waiter is handed the
 * resource or woken, as by RELEASE (it may be free and reserved for the leaver).
 * KEYS: for each resource, its queue and deadlines. ARGV: waiter id, wake
 * channel prefix (`<prefix>wake:`: the lock, counter and hand-over keys are
 * built from it and the queue key, as ACQUIRE builds its keys).
 */
export const LEAVE_QUEUE = defineScript(
  'leave-queue',
  `${GRANT}
local base = string.sub(ARGV[2], 1, #ARGV[2] - 5)
for i = 1, #KEYS, 2 do
  local q, d = KEYS[i], KEYS[i + 1]
  -- A semaphore slot's queue ('queue#<slot>:'): that slot's lock and hand-overs.
  local c = string.find(q, ':', #base + 6, true)
  local tag, rest = string.sub(q, #base + 6, c - 1), string.sub(q, c + 1)
  local lockKey, h = base .. 'lock' .. tag .. ':' .. rest, base .. 'handover' .. tag .. ':' .. rest
  local first = redis.call('ZRANGE', q, 0, 0)[1]
  local e = redis.call('HGET', h, ARGV[1])
  redis.call('ZREM', q, ARGV[1])
  redis.call('HDEL', d, ARGV[1])
  redis.call('HDEL', h, ARGV[1])
  local freed = false
  local v = e and string.match(e, '^%S+ %S+ %S+ %S+ m (.*)$')
  if v and redis.call('GET', lockKey) == v then
    redis.call('DEL', lockKey)
    freed = true
  end
  if first == ARGV[1] or freed then
    local head = firstFresh(q, d, h)
    if head then grant(lockKey, base .. 'fence:' .. rest, h, head, ARGV[2] .. string.match(head, '^[^.]*'), tag ~= '' and base .. 'lock:' .. rest) end
  end
end
return 1
`,
  {
    argv: (args: { waiter: string; wakePrefix: string }) => [args.waiter, args.wakePrefix],
    decode: () => undefined,
  },
);

/**
 * The scripts a lock node runs, loaded on each connection as soon as it is
 * ready: EVALSHA then never meets NOSCRIPT in normal operation, whose EVAL
 * fallback would be sent after commands queued behind the failed EVALSHA.
 */
export const NODE_SCRIPTS: readonly Script[] = [
  ACQUIRE,
  CONFIRM_TOKEN,
  EXTEND,
  SLOT_EXTEND,
  RELEASE,
  LEAVE_QUEUE,
  INSPECT,
  FORCE_RELEASE,
  ...PERMIT_SCRIPTS,
];
