// Each script is one atomic step in Redis; KEYS and ARGV are listed where they are called.

/**
 * Writes the record (and its facets) when its version is not older than the stored one,
 * and files it in the indexes `list` walks (see redis-reads): KEYS[2] every run, [3] its
 * repo's, [4] its source's, [5] the active runs (ARGV[6] = '1' while not finished).
 * KEYS[6] is set by the first save of an empty store: every run is in the indexes then.
 */
const saveScript = `
local current = redis.call('HGET', KEYS[1], 'version')
if current and current > ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'record', ARGV[2], 'facets', ARGV[5])
if redis.call('ZCARD', KEYS[2]) == 0 then redis.call('SET', KEYS[6], '1') end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[4])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[4])
if ARGV[6] == '1' then redis.call('ZADD', KEYS[5], ARGV[3], ARGV[4]) else redis.call('ZREM', KEYS[5], ARGV[4]) end
return 1
`;

/**
 * The live workers: members of KEYS[1] whose entry key (ARGV[1] .. id) has not expired.
 * The entry's TTL, kept by Redis, decides; a member whose entry is gone is dropped here.
 */
const listWorkersScript = `
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local info = redis.call('GET', ARGV[1] .. id)
  if info then table.insert(out, info) else redis.call('ZREM', KEYS[1], id) end
end
return out
`;

/** Appends a journal entry to its kind's list (KEYS[2]) under the next seq, keeping ARGV[2]. */
const journalScript = `
local seq = redis.call('INCR', KEYS[1])
redis.call('LPUSH', KEYS[2], seq .. ' ' .. ARGV[1])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
return seq
`;

/** Takes the lease when free (or expired: the key is gone) or already ours. */
const acquireScript = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`;

const renewScript = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/** Checks ownership and records a rejection in the same step. */
const fenceScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
redis.call('RPUSH', KEYS[2], ARGV[2])
return 0
`;

const releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;

/** releaseScript on KEYS[1]/ARGV[1], then acquireScript on KEYS[2]/ARGV[2..3]. */
const handOverScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
local holder = redis.call('GET', KEYS[2])
if holder and holder ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return 1
`;

// Binds KEYS[1] unless it, or its former spelling KEYS[2] (KEYS[1] again when it has none),
// holds a value: one step, so two processes never both bind it.
const bindRequestScript = `
local held = redis.call('GET', KEYS[1]) or redis.call('GET', KEYS[2])
if held then return {held, 0} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {ARGV[1], 1}
`;

/** The scripts, sent once and then called by their SHA (ioredis `defineCommand`). */
export const scripts = {
  cfSave: { numberOfKeys: 6, lua: saveScript },
  cfListWorkers: { numberOfKeys: 1, lua: listWorkersScript },
  cfJournal: { numberOfKeys: 2, lua: journalScript },
  cfAcquire: { numberOfKeys: 1, lua: acquireScript },
  cfRenew: { numberOfKeys: 1, lua: renewScript },
  cfFence: { numberOfKeys: 2, lua: fenceScript },
  cfRelease: { numberOfKeys: 1, lua: releaseScript },
  cfHandOver: { numberOfKeys: 2, lua: handOverScript },
  cfBindRequest: { numberOfKeys: 2, lua: bindRequestScript },
} as const;

export type ScriptCalls = { [name in keyof typeof scripts]: (...args: (string | number)[]) => Promise<unknown> };
