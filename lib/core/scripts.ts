import type { AcquireArgs, AcquireReply } from './acquire-contract.js';
import { FORCE_RELEASE, INSPECT } from './operator-scripts.js';
import { AT_LEAST, PERMIT_SCRIPTS } from './permit-scripts.js';
import { defineScript, integer, tuple, type Script } from './script.js';

export { SET_NX, type AcquireArgs, type AcquireReply, type FairWaiting } from './acquire-contract.js';
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
 * not use); {0, -3} when the resource is free but reserved for an earlier waiter.
 */
export const ACQUIRE = defineScript(
  'acquire',
  `${AT_LEAST}
local value = ARGV[1]
local spec = ARGV[3]
local fair = spec ~= ''
local retention = ARGV[5]
local n = #KEYS
local q0 = n
if retention then q0 = 2 * n end
-- K: the lock keys, then (fencing on) the n fence counters, then (fair waiting
-- on) each resource's queue and queue deadlines, then each one's hand-overs.
local K = KEYS
if ARGV[4] then
  local p = tonumber(ARGV[4])
  local base = string.sub(KEYS[1], 1, p)
  K = {}
  for i = 1, n do
    local rest = string.sub(KEYS[i], p + 6)
    K[i] = KEYS[i]
    if retention then K[n + i] = base .. 'fence:' .. rest end
    if fair then
      K[q0 + 2 * i - 1] = base .. 'queue:' .. rest
      K[q0 + 2 * i] = base .. 'queue-deadlines:' .. rest
      K[q0 + 2 * n + i] = base .. 'handover:' .. rest
    end
  end
end
-- The waiter's id, first-attempt time, entry ttl and attempt number, read from
-- the spec only on the paths that need them (a queue that is not empty, or joining it).
local waiter, since, entryTtl, attempt
-- If every key already holds this value, an earlier run took them (ioredis may
-- send a command twice after a reconnect, or an earlier attempt's undo was lost
-- with its connection): answer the same without raising counters, and set them
-- again below, so that they expire a ttl after this attempt began, not before.
local mine = 0
local blocker
-- One resource (the usual case): SET NX first, one call when the key is free;
-- undone below if the resource turns out to be reserved.
local taken = false
if n == 1 then
  if redis.call('SET', K[1], value, 'NX', 'PX', ARGV[2]) then
    taken = true
  elseif redis.call('GET', K[1]) == value then
    mine = 1
  else
    blocker = 1
  end
else
  for i = 1, n do
    local v = redis.call('GET', K[i])
    if v == value then
      mine = mine + 1
    elseif v then
      blocker = i
      break
    end
  end
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
      redis.call('HSET', h, waiter, ARGV[2] .. ' ' .. attempt .. ' ' .. (retention or '0') .. ' ' .. (ARGV[6] or '0') .. ' m ' .. value)
      atLeast(h, entryTtl)
    end
  end
  if blocker then return {0, -1} end
  return {0, -3}
end
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
-- missed acquisitions. SET .. GET writes the floor and reads the old counter in
-- one call; only a counter at or above the floor (a client with a clock ahead
-- of this one's, or several acquisitions within one µs) needs a second write.
local floor = tonumber(ARGV[6])
local token = floor
for i = n + 1, 2 * n do
  local c = tonumber(redis.call('SET', K[i], ARGV[6], 'PX', retention, 'GET') or '')
  if c and c >= token then token = c + 1 end
end
if token > floor then
  -- string.format keeps all digits: Redis would print a large number in exponent form.
  local text = string.format('%.0f', token)
  for i = n + 1, 2 * n do
    redis.call('SET', K[i], text, 'PX', retention)
  end
end
return {1, token}
`,
  {
    // Every argument costs on both ends: the layout is told by the counts, not by flags.
    argv: ({ value, ttl, fair, fencing, prefixLength, attempt }: AcquireArgs) => {
      const spec = !fair ? '' : fair.join ? `${fair.join.waiter} ${fair.join.since} ${fair.join.entryTtl} ${attempt ?? 1}` : '-';
      if (fencing) return [value, String(ttl), spec, String(prefixLength), String(fencing.retention), String(fencing.floor)];
      return fair ? [value, String(ttl), spec, String(prefixLength)] : [value, String(ttl), spec];
    },
    decode: (reply): AcquireReply => {
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

export interface ReleaseArgs {
  readonly value: string;
  /**
   * With fair waiting on: the key prefix's length in bytes (the script builds
   * the queue keys and the wake channel from it); the waiter id under which
   * this holder queued, if it did (`leaving`); for an undo, the waiter whose
   * attempt is undone (`undoneBy`, not woken by it).
   */
  readonly fair?: { readonly prefixLength: number; readonly leaving?: string; readonly undoneBy?: string };
}

/**
 * Lua: the hand-over of a freed resource to its first waiter, for RELEASE and
 * LEAVE_QUEUE. `grant(lockKey, fenceKey, handovers, head, channel)`, called
 * only with a head `firstFresh` found fresh in the same script: when the lock
 * key is free and the head left a
 * hand-over (a waiter for this one resource, see ACQUIRE), the key is set to the waiter's
 * value with its ttl, the fencing counter raised as ACQUIRE raises it (above
 * the counter, at least the floor the waiter's attempt sent), and
 * '<head> <attempt> <token>' published on the waiter's channel: the waiter
 * holds the lock where a majority of nodes said so (see `Turn.handedOver`),
 * with no attempt of its own. Otherwise the head is only woken ('<head>').
 * The key is set on an empty key only (NX): what it held was deleted in the
 * same script, so lifetimes of two holders' keys on a node stay disjoint, as
 * with SET NX.
 */
const GRANT = `
-- The first waiter in line whose entry is fresh (or \`keep\`, whatever its entry):
-- stale entries before it (waiters that crashed, or left without a word) are
-- dropped, as ACQUIRE drops them, so that the lock goes to the next live waiter
-- instead of a message nobody reads.
local function firstFresh(q, d, h, keep)
  local head = redis.call('ZRANGE', q, 0, 0)[1]
  local now
  while head and head ~= keep do
    if not now then
      local t = redis.call('TIME')
      now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    if tonumber(redis.call('HGET', d, head) or '0') >= now then return head end
    redis.call('ZREM', q, head)
    redis.call('HDEL', d, head)
    redis.call('HDEL', h, head)
    head = redis.call('ZRANGE', q, 0, 0)[1]
  end
  return head
end
local function grant(lockKey, fenceKey, h, head, channel)
  local e = redis.call('HGET', h, head)
  local ttl, attempt, retention, floor, v
  -- A mutex waiter's only ('m'): a permit waiter queued here (the resource was
  -- mixed up; its next attempt says so, typed) is only woken.
  if e then ttl, attempt, retention, floor, v = string.match(e, '^(%S+) (%S+) (%S+) (%S+) m (.*)$') end
  if v and redis.call('SET', lockKey, v, 'NX', 'PX', ttl) then
    local token = '0'
    if retention ~= '0' then
      token = floor
      local c = tonumber(redis.call('SET', fenceKey, floor, 'PX', retention, 'GET') or '')
      if c and c >= tonumber(floor) then
        token = string.format('%.0f', c + 1)
        redis.call('SET', fenceKey, token, 'PX', retention)
      end
    end
    -- pcall: a PUBLISH refused (an ACL user without the wake channels) must not fail
    -- the script after its writes, which Redis keeps: the waiter then finds its lock
    -- by polling, and the client reports the refused subscription.
    redis.pcall('PUBLISH', channel, head .. ' ' .. attempt .. ' ' .. token)
  else
    redis.pcall('PUBLISH', channel, head)
  end
end
`;

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
 * on, the key prefix's length in bytes, the holder's waiter id (optional), and,
 * for an undo, the undoing waiter's id. Returns how many keys were deleted.
 */
export const RELEASE = defineScript(
  'release',
  `${GRANT}
local value = ARGV[1]
local deleted = 0
if #ARGV == 1 then
  for i = 1, #KEYS do
    if redis.call('GET', KEYS[i]) == value then
      redis.call('DEL', KEYS[i])
      deleted = deleted + 1
    end
  end
  return deleted
end
local p = tonumber(ARGV[2])
local base = string.sub(KEYS[1], 1, p)
local waiter = ARGV[3] or ''
for i = 1, #KEYS do
  local rest = string.sub(KEYS[i], p + 6)
  local q, d, h = base .. 'queue:' .. rest, base .. 'queue-deadlines:' .. rest, base .. 'handover:' .. rest
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
      grant(KEYS[i], base .. 'fence:' .. rest, h, head, base .. 'wake:' .. string.match(head, '^[^.]*'))
    end
  end
end
return deleted
`,
  {
    argv: ({ value, fair }: ReleaseArgs) => {
      if (!fair) return [value];
      const argv = [value, String(fair.prefixLength)];
      if (fair.undoneBy !== undefined) argv.push(fair.leaving ?? '', fair.undoneBy);
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
  local rest = string.sub(q, #base + 7)
  local lockKey, h = base .. 'lock:' .. rest, base .. 'handover:' .. rest
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
    if head then grant(lockKey, base .. 'fence:' .. rest, h, head, ARGV[2] .. string.match(head, '^[^.]*')) end
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
  RELEASE,
  LEAVE_QUEUE,
  INSPECT,
  FORCE_RELEASE,
  ...PERMIT_SCRIPTS,
];
