/**
 * Lua: the uncontended path of ACQUIRE and RELEASE, at the head of each script,
 * ahead of the helpers pasted there (GRANT, SLOT_LUA...). It serves the usual call,
 * one resource that is not a semaphore's slot with nobody queued for it, with the
 * least work: two keys built instead of four, no table of keys, no closures. Any
 * other case falls through to the full script with nothing written, so it changes
 * no answer: only what the common one costs on a node (the nodes' CPU shares the
 * machine with the client's: README, "A fast path at the head of the scripts").
 *
 * A queue is tested by EXISTS: Redis deletes an empty sorted set, so a queue key
 * exists only while someone is queued there. Where a waiter is queued (its entry
 * fresh or stale), the full script decides.
 */

/**
 * Fencing: one token, above the counter and at least `floor` (the acquiring client's
 * clock in µs), the counter raised to it. Defined first: ACQUIRE's fast path and its
 * full path both raise the counters with it (`counters`: their keys).
 */
export const RAISE_FENCES = `
local function raiseFences(counters, floorText, retention)
  -- SET .. GET writes the floor and reads the old counter in one call; only a
  -- counter at or above the floor needs a second write.
  local floor = tonumber(floorText)
  local token = floor
  for i = 1, #counters do
    local c = tonumber(redis.call('SET', counters[i], floorText, 'PX', retention, 'GET') or '')
    if c and c >= token then token = c + 1 end
  end
  if token > floor then
    -- string.format keeps all digits: Redis would print a large number in exponent form.
    local text = string.format('%.0f', token)
    for i = 1, #counters do
      redis.call('SET', counters[i], text, 'PX', retention)
    end
  end
  return token
end`;

/**
 * ACQUIRE's fast path (ARGV as ACQUIRE's): with fencing or fair waiting on (ARGV[4],
 * the prefix's length, sent), one key, no limit, a lock key `<prefix>lock:<rest>`
 * (byte 58 is its ':'; a slot's is `lock#<slot>:`), and no queue: SET NX, and the
 * counter raised as the full path raises it. A refused SET falls through (the full
 * script's SET NX is then refused again, and reads who holds the key).
 */
export const ACQUIRE_FAST = `${RAISE_FENCES}
local p = tonumber(ARGV[4])
if p and #KEYS == 1 and not ARGV[7] and string.byte(KEYS[1], p + 5) == 58 then
  local base, rest = string.sub(KEYS[1], 1, p), string.sub(KEYS[1], p + 6)
  if (ARGV[3] == '' or redis.call('EXISTS', base .. 'queue:' .. rest) == 0)
    and redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    if not ARGV[5] then return {1, 0} end
    return {1, raiseFences({base .. 'fence:' .. rest}, ARGV[6], ARGV[5])}
  end
end`;

/**
 * RELEASE's fast path (ARGV as RELEASE's): without fair waiting (ARGV: the value
 * alone), compare-and-delete; with it, for one lock key `<prefix>lock:<rest>`
 * released by a holder that never queued and is not an undo (ARGV: value, prefix
 * length), where no queue waits for a hand-over, compare-and-delete.
 */
export const RELEASE_FAST = `
if #ARGV == 1 then
  local deleted = 0
  for i = 1, #KEYS do
    if redis.call('GET', KEYS[i]) == ARGV[1] then
      redis.call('DEL', KEYS[i])
      deleted = deleted + 1
    end
  end
  return deleted
end
if #ARGV == 2 and #KEYS == 1 then
  local p = tonumber(ARGV[2])
  -- The queue first: where one waits (contention), the full script reads the key, once.
  if string.byte(KEYS[1], p + 5) == 58
    and redis.call('EXISTS', string.sub(KEYS[1], 1, p) .. 'queue:' .. string.sub(KEYS[1], p + 6)) == 0 then
    if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
    redis.call('DEL', KEYS[1])
    return 1
  end
end`;
