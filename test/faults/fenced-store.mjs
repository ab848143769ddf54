// The fault suite's own fenced store: the protected resource, on a Redis server
// that is NOT one of the lock nodes. Every access (reads included) is one Lua
// script that checks AND records the caller's fencing token atomically:
//   token <  highest seen  -> rejected (stale), nothing read or written;
//   token >= highest seen  -> highest := token, then the read or write.
// Checking reads too matters: if only writes were checked, a new holder could
// read, an old holder's write would then be accepted, and the new holder would
// overwrite it (a lost update).
//
// Every decision is also appended to an audit list in the store, in the order
// the store made it (scripts run one at a time), so the checker can verify the
// store's history in its own linearization order rather than by timestamps.
//
// The library ships its own RedisFencedStore; this one is deliberately
// independent of it so the suite checks the lock, not the library's store.

const ACCESS = `
local token = tonumber(ARGV[1])
local op = ARGV[2]
local who = ARGV[3]
local highest = tonumber(redis.call('GET', KEYS[2]) or '-1')
local seq = redis.call('INCR', KEYS[3])
if token < highest then
  redis.call('RPUSH', KEYS[4], seq .. ' ' .. ARGV[1] .. ' ' .. who .. ' ' .. op .. ' stale')
  return {0, string.format('%.0f', highest), seq}
end
if token > highest then redis.call('SET', KEYS[2], ARGV[1]) end
local result = false
if op == 'get' then
  result = redis.call('GET', KEYS[1])
elseif op == 'set' then
  redis.call('SET', KEYS[1], ARGV[4])
  result = ARGV[4]
end
redis.call('RPUSH', KEYS[4], seq .. ' ' .. ARGV[1] .. ' ' .. who .. ' ' .. op .. ' ok')
return {1, result, seq}
`;

export class StaleToken extends Error {
  code = 'STALE_TOKEN';
  constructor(key, token, highest) {
    super(`stale fencing token ${token} for ${key}: the store has seen ${highest}`);
    this.token = token;
    this.highest = highest;
  }
}

export class FencedStore {
  /** @param client an ioredis client on the store's own server; @param prefix a namespace per scenario */
  constructor(client, prefix) {
    this.client = client;
    this.prefix = prefix;
    client.defineCommand('fencedAccess', { numberOfKeys: 4, lua: ACCESS });
  }

  keys(key) {
    return [`${this.prefix}data:${key}`, `${this.prefix}highest:${key}`, `${this.prefix}seq`, `${this.prefix}log`];
  }

  async access(key, token, who, op, value) {
    if (!Number.isSafeInteger(token) || token < 0) throw new TypeError(`not a fencing token: ${token}`);
    const args = [String(token), op, who];
    if (value !== undefined) args.push(String(value));
    const [accepted, result, seq] = await this.client.fencedAccess(...this.keys(key), ...args);
    if (accepted !== 1) throw new StaleToken(key, token, Number(result));
    return { value: result, seq };
  }

  /** Read, checking and recording the token. */
  get(key, token, who) {
    return this.access(key, token, who, 'get');
  }

  /** Write, checking and recording the token. */
  set(key, value, token, who) {
    return this.access(key, token, who, 'set', value);
  }

  /** The store's audit log, in its own order: { seq, token, who, op, ok }. */
  async log() {
    const lines = await this.client.lrange(`${this.prefix}log`, 0, -1);
    return lines.map((line) => {
      const [seq, token, who, op, outcome] = line.split(' ');
      return { seq: Number(seq), token: Number(token), who, op, ok: outcome === 'ok' };
    });
  }

  async value(key) {
    return this.client.get(`${this.prefix}data:${key}`);
  }
}
