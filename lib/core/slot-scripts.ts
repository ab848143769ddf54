import { defineScript, integer } from './script.js';

// A semaphore's Lua (`limit: n`). A semaphore of limit n is n slots, each a lock
// of its own: `<prefix>lock#<slot>:<resource>`, with its own queue and hand-overs
// (`queue#<slot>:`, `queue-deadlines#<slot>:`, `handover#<slot>:`) and the
// resource's one fence counter. ACQUIRE, RELEASE and LEAVE_QUEUE treat a slot as
// the lock it is (they build a key's other keys from what follows its kind, the
// slot's number kept on its queue keys, not on its counter), with the functions
// below pasted in. A permit is a slot held on a majority: two permits on one slot
// would need two majorities, which share a node where the slot's key has one
// holder (SET NX), so at most n permits hold at once (see the README's "Semaphores
// and read-write locks").
//
// Beside the slots, the semaphore's marker holds '#<limit>' at the resource's own
// lock key, `<prefix>lock:<resource>`, while any permit may be held: every grant and
// extension keeps it `2 * ttl` once it is found shorter than `ttl`, and the release
// of the last permit deletes it. While it is there, a mutex's SET NX finds the key
// taken (its script then reads the '#' and says so, typed; the plain protocol's bare
// SET NX is refused as busy), a read-write lock's permit finds a string where its
// set would be, and a semaphore of another limit reads another limit: all refused,
// and a free mutex pays nothing for the check. No lock value starts with '#' (they
// are base64url, see acquire-plan.ts). The marker is written only over itself or
// nothing, never over a mutex's key (a marker that ran out while a permit outlived it).

/**
 * Lua, pasted into ACQUIRE and RELEASE:
 * - `isMark(key)`: the marker's limit, if \`key\` holds a marker.
 * - `keepMark(mark, limit, ttl)`: the marker outlives a permit of `ttl` ms.
 * - `otherKind(base, rest, limit)`: how the resource is used if not as this
 *   semaphore: another limit (the marker), 'mutex' (another string at its lock key), or
 *   a read-write lock (its holders' set there: its kind key, 'rw'); nil when free for it.
 * - `freeSlots(base, rest, tag, limit)`: the other slots this node has free with nobody
 *   queued for them (a few looked at, from the next on, the same on every node), for a
 *   caller refused the slot `tag` ('#<slot>') to take one that a majority has free
 *   instead of waiting (the nodes' states may differ: each names all it has).
 * - `shorterQueues(base, rest, tag, limit, waiter, since)`: with no slot free, the
 *   other slots whose queue would put \`waiter\`, just queued for slot `tag`, at least 3
 *   places further ahead (the entries before \`since\` there against its rank here),
 *   for it to move to as to a free one. Slots drawn at random leave the queues
 *   uneven, and the callers at the back of a long one make the longest waits. Why 3
 *   places: a move costs a round (see SlotChoice); moves for 2 places cost more
 *   permits per second and cut no more of the tail (README, "Semaphores and
 *   read-write locks").
 * - `slotFreed(base, rest, tag, firstFresh)`: slot `tag` was released with nobody
 *   queued for it: the first waiter of another slot's queue (a few looked at) is woken
 *   with this slot's number, to move here; with nobody waiting there either and no
 *   slot held, the marker goes (the first slot found held stops the look), so that the
 *   resource may be used as another kind at once.
 */
export const SLOT_LUA = `
local function isMark(key)
  local t = redis.call('TYPE', key)['ok']
  if t ~= 'string' then return nil, t end
  local v = redis.call('GET', key)
  if string.byte(v, 1) == 35 then return string.sub(v, 2), t end
  return nil, t
end
local function keepMark(mark, limit, ttl)
  if redis.call('PTTL', mark) < tonumber(ttl) then
    local m, t = isMark(mark)
    if m or t == 'none' then redis.call('SET', mark, '#' .. limit, 'PX', 2 * tonumber(ttl)) end
  end
end
local function otherKind(base, rest, limit)
  local m, t = isMark(base .. 'lock:' .. rest)
  if m then
    if m ~= limit then return m end
    return nil
  end
  if t == 'string' then return 'mutex' end
  if t ~= 'none' then return redis.call('GET', base .. 'kind:' .. rest) or 'rw' end
  return nil
end
local function freeSlots(base, rest, tag, limit)
  local s, l = tonumber(string.sub(tag, 2)), tonumber(limit)
  local free = {}
  for j = 1, math.min(l - 1, 8) do
    local k = (s + j) % l
    if redis.call('EXISTS', base .. 'lock#' .. k .. ':' .. rest) == 0 and redis.call('ZCARD', base .. 'queue#' .. k .. ':' .. rest) == 0 then
      table.insert(free, k)
    end
  end
  return free
end
local function shorterQueues(base, rest, tag, limit, waiter, since)
  local own = redis.call('ZRANK', base .. 'queue' .. tag .. ':' .. rest, waiter)
  local named = {}
  if not own or own < 3 then return named end
  local s, l = tonumber(string.sub(tag, 2)), tonumber(limit)
  for j = 1, math.min(l - 1, 8) do
    local k = (s + j) % l
    if redis.call('ZCOUNT', base .. 'queue#' .. k .. ':' .. rest, '-inf', '(' .. since) <= own - 3 then table.insert(named, k) end
  end
  return named
end
local function slotFreed(base, rest, tag, firstFresh)
  local mark = base .. 'lock:' .. rest
  local m = isMark(mark)
  local l = tonumber(m or '1')
  local s = string.sub(tag, 2)
  for j = 1, math.min(l - 1, 8) do
    local k = '#' .. ((tonumber(s) + j) % l) .. ':' .. rest
    local other = firstFresh(base .. 'queue' .. k, base .. 'queue-deadlines' .. k, base .. 'handover' .. k)
    if other then
      redis.pcall('PUBLISH', base .. 'wake:' .. string.match(other, '^[^.]*'), other .. ' #' .. s) -- pcall: see GRANT
      return
    end
  end
  for i = 0, l - 1 do
    if redis.call('EXISTS', base .. 'lock#' .. i .. ':' .. rest) == 1 then return end
  end
  if m then redis.call('DEL', mark) end
end
`;

/**
 * Extend a semaphore's permit (its slot's lock key) that is still there, and keep
 * the semaphore's marker alive as long.
 * KEYS: the slot's lock key, the marker. ARGV: value, ttl ms, limit. Returns 1 when extended.
 */
export const SLOT_EXTEND = defineScript(
  'slot-extend',
  `${SLOT_LUA}
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
keepMark(KEYS[2], ARGV[3], ARGV[2])
return 1
`,
  {
    argv: (args: { value: string; ttl: number; limit: number }) => [args.value, String(args.ttl), String(args.limit)],
    decode: (reply) => integer(reply) === 1,
  },
);
