import type { AcquireReply } from './acquire-contract.js';
import { defineScript, integer, tuple } from './script.js';

/**
 * Lua: \`atLeast(key, ms)\` gives a queue key (the queue, its deadlines, the
 * hand-overs) at least \`ms\` more to live, never less. Those keys hold every
 * waiter's entry: set to one caller's entry ttl, a short one (a caller with
 * a short retry delay, about to give up) would expire a patient waiter's place,
 * and with it the reservation and the hand-over it is owed. PTTL first, not
 * PEXPIRE GT: Redis 6.2 and KeyDB have no GT, and GT never sets a key with no ttl.
 * A key found short gets twice \`ms\`: every refused attempt queues its waiter
 * (three of these per attempt), and set to \`ms\` exactly the key was short again
 * at the next one, a PEXPIRE each time; so it is set about once per \`ms\`. The
 * keys of a queue nobody waits in any more then live up to \`2 * ms\` instead of
 * \`ms\`: 1.8 s instead of 0.9 with the default options (see entryTtl in acquire-plan.ts).
 */
export const AT_LEAST = `
local function atLeast(key, ms)
  if redis.call('PTTL', key) < tonumber(ms) then redis.call('PEXPIRE', key, 2 * ms) end
end`;

// The scripts of read-write locks' permits (`mode`). A semaphore (`limit: n`) is
// its slots, each a lock (see slot-scripts.ts), not these. Beside scripts.ts rather than in it: that file holds the mutex's Lua and is at
// its size limit; NODE_SCRIPTS there loads these too.
//
// One resource's holders live in a sorted set at its lock key (member: the
// holder's secret value, score: when the permit expires, on this node's clock),
// so that a mutex's SET NX / GET on that key fails with WRONGTYPE and a permit's
// ZSET command on a mutex's string fails the same way: the two cannot be mixed
// in silence. Beside it, `kind:<resource>` says how it is used ('rw'), for as
// long as the set lives. A member or waiter id ending in ':w' is a writer: it
// weighs the whole limit (RW_LIMIT); a reader weighs 1. So one rule serves both:
// admitted when the holders' weight, the weight of the fresh waiters queued
// ahead, and its own fit in the limit.
//
// The queue (a sorted set of waiter ids by when they started waiting) and its
// deadlines (a hash) are as ACQUIRE's, with one addition: a waiter admitted on
// this node keeps its place, marked in the deadlines as a holder here by a
// negative value, -(until when). Every node must put the same waiters first: an
// attempt refused elsewhere is undone here, and its retry must find its old place
// on every node, not a later one (see the README's "Liveness"). A mark is not
// counted as a waiter ahead (its weight is in the holders' set); it is dropped
// once past, as a stale waiter is, or when its holder releases.
//
// The Lua helpers below are pasted at the head of each script that needs them
// (a script cannot call another); the operators' scripts (operator-scripts.ts) use them too.
export const HELPERS = `
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local RW_LIMIT = 1e9
local function weight(member)
  if string.sub(member, -2) == ':w' then return RW_LIMIT end
  return 1
end
-- The weight of the live holders (expired ones are dropped first).
local function heldWeight(key, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. now)
  local used = 0
  for _, m in ipairs(redis.call('ZRANGE', key, 0, -1)) do used = used + weight(m) end
  return used
end
-- The set and its kind outlive a permit of ttl ms just granted or extended: found
-- shorter, both get twice that (as atLeast, and set together, so the kind lives as
-- long as the set). One PTTL on most grants, where reading the longest permit and
-- setting both keys to it was three calls on every grant; a set then lives up to
-- twice its longest permit's ttl past the last release.
local function keepFor(key, kindKey, kind, ttl)
  if redis.call('PTTL', key) < ttl then
    redis.call('PEXPIRE', key, 2 * ttl)
    redis.call('SET', kindKey, kind, 'PX', 2 * ttl)
  end
end
`;

/** A queue entry's state: 'fresh' (a waiter), 'held' (admitted here: a holder's mark) or 'stale'. */
const ENTRY_STATE = `
local function entryState(d, id, now)
  local v = tonumber(redis.call('HGET', d, id) or '0')
  if v >= now then return 'fresh' end
  if v < 0 and -v >= now then return 'held' end
  return 'stale'
end
`;

/**
 * The wake walk: in queue order, each fresh waiter that now fits is woken (marks and stale
 * entries are passed over). With `hand` (PERMIT_RELEASE's), a waiter that left a hand-over
 * (see PERMIT_ACQUIRE) is handed its permit instead, as GRANT in scripts.ts hands
 * a mutex over: its member added with its ttl, its entry turned into a holder's mark, the
 * counter raised as an acquire raises it, and '<id> <attempt> <token>' published. It carries
 * ENTRY_STATE: the operators' scripts paste it too.
 */
export const WAKE = `${ENTRY_STATE}
local function handOver(d, id, now, hand)
  local ttl, attempt, retention, floor, kind, member = string.match(redis.call('HGET', hand.handover, id) or '', '^(%S+) (%S+) (%S+) (%S+) (%S+) (.*)$')
  -- No counter to raise (a releasing client with fencing off), or a waiter for
  -- another kind of lock (the resource was mixed up; its next attempt says so,
  -- typed): only woken.
  if not member or kind ~= hand.kind or (retention ~= '0' and not hand.fence) then return false end
  redis.call('ZADD', hand.key, now + tonumber(ttl), member)
  redis.call('HSET', d, id, -(now + tonumber(ttl)))
  keepFor(hand.key, hand.kindKey, hand.kind, tonumber(ttl))
  local token = '0'
  if retention ~= '0' then
    token = floor
    local c = tonumber(redis.call('SET', hand.fence, floor, 'PX', retention, 'GET') or '')
    if c and c >= tonumber(floor) then
      token = string.format('%.0f', c + 1)
      redis.call('SET', hand.fence, token, 'PX', retention)
    end
  end
  return id .. ' ' .. attempt .. ' ' .. token
end
local function wake(q, d, now, used, prefix, skip, hand)
  local ahead = 0
  for _, id in ipairs(redis.call('ZRANGE', q, 0, -1)) do
    if entryState(d, id, now) == 'fresh' then
      ahead = ahead + weight(id)
      if used + ahead > RW_LIMIT then return end
      if id ~= skip then
        local message = hand and handOver(d, id, now, hand) or id
        redis.pcall('PUBLISH', prefix .. string.match(id, '^[^.]*'), message) -- pcall: see GRANT in scripts.ts
      end
    end
  end
end
`;

/** How a permit is held: `kind` 'rw' (kept in the kind key); `member` is the value, with ':w' for a writer. */
export interface PermitAcquireArgs {
  readonly member: string;
  readonly ttl: number;
  readonly kind: string;
  /** As ACQUIRE's: absent, fair waiting off; `join` absent, fair without queueing. */
  readonly fair?: { readonly join?: { readonly waiter: string; readonly since: number; readonly entryTtl: number } };
  readonly fencing?: { readonly retention: number; readonly floor: number };
  /** As ACQUIRE's: which attempt of the call this is, kept in the queue entry for a hand-over. */
  readonly attempt?: number;
}

/**
 * Take a permit of one resource, fairly.
 * KEYS: holders (the lock key), kind; then the fence counter (fencing on); then
 * the queue and its deadlines (fair waiting on).
 * ARGV: member, ttl ms, kind, queue spec (as ACQUIRE's: '' off, '-' fair without
 * joining, else 'waiter since entry-ttl attempt'); then, fencing on, retention ms and floor.
 * With fair waiting, KEYS ends with the hand-overs: a refused waiter leaves its
 * own there, as ACQUIRE's (ttl, attempt, retention and floor, '0 0' with fencing
 * off, member): see WAKE.
 * Returns {1, token} when taken, {0, -1} when refused (the caller queued, if it
 * joins); an error reply 'WRONGKIND <kind>' when the resource is held with
 * another kind (another limit, or read-write against a semaphore).
 */
export const PERMIT_ACQUIRE = defineScript(
  'permit-acquire',
  `${HELPERS}${AT_LEAST}${ENTRY_STATE}
local key, kindKey = KEYS[1], KEYS[2]
local member, ttl, kind, spec, retention = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local q, d, h = KEYS[3], KEYS[4], KEYS[5]
if retention then q, d, h = KEYS[4], KEYS[5], KEYS[6] end
local fair = spec ~= ''
local now = clock()
-- A string at the key, where the holders' set would be, refuses: a semaphore's
-- marker ('#<limit>', see slot-scripts.ts) says so, typed; a mutex's value raises
-- WRONGTYPE, which the client reports as the mix it is.
local dropped = redis.pcall('ZREMRANGEBYSCORE', key, '-inf', '(' .. now)
if type(dropped) == 'table' and dropped.err then
  local v = redis.call('GET', key)
  if v and string.byte(v, 1) == 35 then return redis.error_reply('WRONGKIND ' .. string.sub(v, 2)) end
  return dropped
end
local used = heldWeight(key, now)
local current = redis.call('GET', kindKey)
if current and current ~= kind and used > 0 then return redis.error_reply('WRONGKIND ' .. current) end
-- Held already by this value (a resent command, or an attempt whose undo was
-- lost): the same answer again, the permit's expiry set anew.
local mine = redis.call('ZSCORE', key, member)
local w = weight(member)
local admitted = mine or used + w <= RW_LIMIT
local waiter, since, entryTtl, attempt
if fair and spec ~= '-' then waiter, since, entryTtl, attempt = string.match(spec, '^(%S+) (%S+) (%S+) (%S+)$') end
-- Free permits go to the fresh waiters in queue order: this caller only after
-- those ahead of it (all of them, when it is not queued).
if fair and admitted and not mine then
  local ahead = 0
  for _, id in ipairs(redis.call('ZRANGE', q, 0, -1)) do
    if id == waiter then break end
    local state = entryState(d, id, now)
    if state == 'fresh' then
      ahead = ahead + weight(id)
      if used + ahead + w > RW_LIMIT then
        admitted = false
        break
      end
    elseif state == 'stale' then
      redis.call('ZREM', q, id)
      redis.call('HDEL', d, id)
      if h then redis.call('HDEL', h, id) end
    end
  end
end
if waiter then
  -- Queued either way, at its place (kept if it has one): as ACQUIRE, ordered
  -- by the client's clock, within a second of this node's. Admitted, it is
  -- marked as a holder here, so that it is not counted twice against the limit.
  local at = tonumber(since)
  if at < now - 1000 then since = now - 1000 elseif at > now + 1000 then since = now + 1000 end
  redis.call('ZADD', q, 'NX', since, waiter)
  redis.call('HSET', d, waiter, admitted and -(now + ttl) or now + tonumber(entryTtl))
  atLeast(q, entryTtl)
  atLeast(d, entryTtl)
  -- Refused, it leaves what a release needs to hand it a permit (see WAKE), in a
  -- hash of its own: the deadlines stay numbers, as an earlier version's scripts
  -- (another process, during a rolling deploy) read them.
  if h and not admitted then
    redis.call('HSET', h, waiter, ttl .. ' ' .. attempt .. ' ' .. (retention or '0') .. ' ' .. (ARGV[6] or '0') .. ' ' .. kind .. ' ' .. member)
    atLeast(h, entryTtl)
  end
end
if not admitted then return {0, -1} end
redis.call('ZADD', key, now + ttl, member)
keepFor(key, kindKey, kind, ttl)
if not retention then return {1, 0} end
local fence = KEYS[3]
if mine then return {1, tonumber(redis.call('GET', fence) or '0')} end
-- Fencing as ACQUIRE: above the counter and at least the client's clock in µs.
local token = tonumber(ARGV[6])
local c = tonumber(redis.call('SET', fence, ARGV[6], 'PX', retention, 'GET') or '')
if c and c >= token then
  token = c + 1
  redis.call('SET', fence, string.format('%.0f', token), 'PX', retention)
end
return {1, token}
`,
  {
    argv: ({ member, ttl, kind, fair, fencing, attempt }: PermitAcquireArgs) => {
      const spec = !fair ? '' : fair.join ? `${fair.join.waiter} ${fair.join.since} ${fair.join.entryTtl} ${attempt ?? 1}` : '-';
      const argv = [member, String(ttl), kind, spec];
      if (fencing) argv.push(String(fencing.retention), String(fencing.floor));
      return argv;
    },
    decode: (reply): AcquireReply => {
      const [taken, value] = tuple(reply, 2);
      return { taken: integer(taken) === 1, value: integer(value) };
    },
  },
);

/**
 * Fencing write-back of a permit (phase 2, as CONFIRM_TOKEN): raise the counter
 * to the token only while this node still has the permit.
 * KEYS: holders, fence counter. ARGV: member, token, retention ms. Returns 1 when held.
 */
export const PERMIT_CONFIRM = defineScript(
  'permit-confirm',
  `${HELPERS}
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) < clock() then return 0 end
if tonumber(redis.call('GET', KEYS[2]) or '0') < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
end
return 1
`,
  {
    argv: (args: { member: string; token: number; retention: number }) => [args.member, String(args.token), String(args.retention)],
    decode: (reply) => integer(reply) === 1,
  },
);

/**
 * Extend a permit that is still there (an expired one is never re-created).
 * KEYS: holders, kind. ARGV: member, ttl ms, kind. Returns 1 when extended, 0 when gone.
 */
export const PERMIT_EXTEND = defineScript(
  'permit-extend',
  `${HELPERS}
local now = clock()
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or tonumber(s) < now then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
keepFor(KEYS[1], KEYS[2], ARGV[3], tonumber(ARGV[2]))
return 1
`,
  {
    argv: (args: { member: string; ttl: number; kind: string }) => [args.member, String(args.ttl), args.kind],
    decode: (reply) => integer(reply) === 1,
  },
);

export interface PermitReleaseArgs {
  /** The permit to give back; '' for none (a waiter leaving the queue). */
  readonly member: string;
  readonly kind: string;
  /**
   * With fair waiting on: the wake channel prefix; the waiter id leaving the
   * queue ('' none: a holder's own id, or a waiter's that gave up); the
   * undone attempt's waiter ('' none), which is not woken and waits again at
   * its place for `entryTtl` ms (its mark, if admitted here, is turned back).
   */
  readonly fair?: { readonly wakePrefix: string; readonly leaving: string; readonly skip: string; readonly entryTtl: number };
}

/**
 * Give a permit back and/or leave the queue; then, in queue order, hand a permit
 * over to every fresh waiter that now fits, or wake it (see WAKE: a woken
 * waiter's attempt is what takes the permit, so a waiter woken twice costs one
 * extra attempt, never a second permit).
 * KEYS: holders; then, fair waiting on, the queue, its deadlines, its
 * hand-overs, the kind key, and (fencing on) the fence counter.
 * ARGV: member, kind; then, fair waiting on, wake prefix, leaving waiter,
 * undone waiter, its entry's ttl ms.
 * Returns how many permits were removed (0 or 1).
 */
export const PERMIT_RELEASE = defineScript(
  'permit-release',
  `${HELPERS}${AT_LEAST}${WAKE}
local removed = 0
if ARGV[1] ~= '' then removed = redis.call('ZREM', KEYS[1], ARGV[1]) end
if #ARGV < 3 then return removed end
local q, d = KEYS[2], KEYS[3]
local now = clock()
local left = 0
if ARGV[4] ~= '' then
  left = redis.call('ZREM', q, ARGV[4])
  redis.call('HDEL', d, ARGV[4])
  if KEYS[4] then redis.call('HDEL', KEYS[4], ARGV[4]) end
end
-- An undone attempt waits again at once: until its retry, the nodes that
-- refused it count it as a waiter ahead, and this one must too.
if ARGV[5] ~= '' and redis.call('ZSCORE', q, ARGV[5]) then
  redis.call('HSET', d, ARGV[5], now + tonumber(ARGV[6]))
  atLeast(q, ARGV[6])
  atLeast(d, ARGV[6])
end
if removed == 0 and left == 0 then return 0 end
local hand = KEYS[5] and { key = KEYS[1], handover = KEYS[4], kindKey = KEYS[5], kind = ARGV[2], fence = KEYS[6] }
wake(q, d, now, heldWeight(KEYS[1], now), ARGV[3], ARGV[5], hand)
return removed
`,
  {
    argv: ({ member, kind, fair }: PermitReleaseArgs) =>
      fair ? [member, kind, fair.wakePrefix, fair.leaving, fair.skip, String(fair.entryTtl)] : [member, kind],
    decode: (reply) => Number(reply),
  },
);

export const PERMIT_SCRIPTS = [PERMIT_ACQUIRE, PERMIT_CONFIRM, PERMIT_EXTEND, PERMIT_RELEASE] as const;
