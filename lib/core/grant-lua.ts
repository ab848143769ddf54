/**
 * Lua: the hand-over of a freed resource to its first waiter, for RELEASE and
 * LEAVE_QUEUE. `grant(lockKey, fenceKey, handovers, head, channel, mark, later)` (`mark`: a
 * semaphore slot's marker, see slot-scripts.ts; false for a lock; `later`: the
 * releaser's fencing floor, see below, or nil), called
 * only with a head `firstFresh` found fresh in the same script: when the lock
 * key is free and the head left a
 * hand-over (a waiter for this one resource, see ACQUIRE), the key is set to the waiter's
 * value with its ttl, the fencing counter raised as ACQUIRE raises it (above
 * the counter, at least the floor the waiter's attempt sent, or the releaser's
 * `later` one where higher), and
 * '<head> <attempt> <token>' published on the waiter's channel: the waiter
 * holds the lock where a majority of nodes said so (see `Turn.handedOver`),
 * with no attempt of its own. Otherwise the head is only woken ('<head>').
 * The key is set on an empty key only (NX): what it held was deleted in the
 * same script, so lifetimes of two holders' keys on a node stay disjoint, as
 * with SET NX.
 *
 * Why the releaser's floor: a semaphore's slots share the resource's one counter,
 * which each node raises in its own order (the grants of other slots, attempts
 * taken on some nodes and undone), so the nodes' counters drift apart, and a
 * hand-over of `counter + 1` then announces a different token from each node: the
 * waiter must wait for every node's hand-over (then it takes the quorum-th highest,
 * see Turn.handedOver) or write the highest back before it holds
 * (AcquireLoop.handedOver), a round for about a third of the permits in the
 * semaphore benchmark before either remedy. The release
 * sends every node one floor, its clock in µs, above what the grants and attempts
 * before it raised the counters to (their floors, whole ms, plus one per grant), so
 * each node announces that floor: the same token, unless two releases reached the
 * nodes in different orders. A floor only raises a counter, so each node's tokens
 * still grow with every grant, which is all the fencing argument needs (README,
 * "Fencing tokens").
 */
export const GRANT = `
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
local function grant(lockKey, fenceKey, h, head, channel, mark, later)
  local e = redis.call('HGET', h, head)
  local ttl, attempt, retention, floor, v
  -- A mutex waiter's only ('m'): a permit waiter queued here (the resource was
  -- mixed up; its next attempt says so, typed) is only woken.
  if e then ttl, attempt, retention, floor, v = string.match(e, '^(%S+) (%S+) (%S+) (%S+) m (.*)$') end
  if v and redis.call('SET', lockKey, v, 'NX', 'PX', ttl) then
    -- A semaphore's slot: its marker outlives the permit (see slot-scripts.ts; a key
    -- that is not the marker, a mutex's, is left as it is).
    if mark and redis.call('PTTL', mark) < tonumber(ttl) then
      local t = redis.call('TYPE', mark)['ok']
      if t == 'string' and string.byte(redis.call('GET', mark), 1) == 35 then redis.call('PEXPIRE', mark, 2 * tonumber(ttl)) end
    end
    local token = '0'
    if retention ~= '0' then
      if later and tonumber(later) > tonumber(floor) then floor = later end
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
