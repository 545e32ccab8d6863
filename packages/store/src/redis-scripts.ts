// Each script is one atomic step in Redis; KEYS and ARGV are listed where they are called.

/**
 * Writes the record when its version is not older than the stored one (KEYS[1]: the run's
 * hash; ARGV[1] version, [2] record, [3] created ms, [4] run id), and files it in the run
 * index sets of its facets, ARGV[5] as a JSON array, taking it out of the sets it was in
 * before (field `indexed`) that it has left. The first save of an empty store (KEYS[2], the
 * set of every run, empty) sets the index version KEYS[3] to ARGV[6]: nothing to migrate. The sets are named in ARGV, not KEYS: the ones a
 * run leaves are known only from its hash. `facets`, which the version before kept, goes:
 * that version's readers then read facets from the record, which is kept current.
 */
const saveScript = `
local current = redis.call('HGET', KEYS[1], 'version')
if current and current > ARGV[1] then return 0 end
local sets = cjson.decode(ARGV[5])
if redis.call('ZCARD', KEYS[2]) == 0 then redis.call('SET', KEYS[3], ARGV[6]) end
local was = redis.call('HGET', KEYS[1], 'indexed')
if was then
  local keep = {}
  for _, set in ipairs(sets) do keep[set] = true end
  for _, set in ipairs(cjson.decode(was)) do
    if not keep[set] then redis.call('ZREM', set, ARGV[4]) end
  end
end
for _, set in ipairs(sets) do redis.call('ZADD', set, ARGV[3], ARGV[4]) end
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'record', ARGV[2], 'indexed', ARGV[5])
redis.call('HDEL', KEYS[1], 'facets')
return 1
`;

/**
 * Files a run saved before the index sets in those of its facets (the migration): KEYS[1]
 * its hash, ARGV[1] the version its facets were read from, [2] created ms, [3] run id, [4]
 * the sets as a JSON array. 1 when filed, or already filed by a save; 0 when the record has
 * changed since it was read (read it again).
 */
const indexRunScript = `
if redis.call('HEXISTS', KEYS[1], 'indexed') == 1 then return 1 end
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
for _, set in ipairs(cjson.decode(ARGV[4])) do redis.call('ZADD', set, ARGV[2], ARGV[3]) end
redis.call('HSET', KEYS[1], 'indexed', ARGV[4])
redis.call('HDEL', KEYS[1], 'facets')
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
// A rejection list keeps its newest ARGV[4] entries and lives ARGV[3] ms past its last one.
const fenceScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[4]), -1)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
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

/**
 * Deletes a finished run (retention): KEYS[1] its hash, KEYS[2] the set of every run; ARGV[1]
 * the run id, [2] the set of active runs. The run leaves every set it is filed in. 0 and
 * nothing done when the run is active: one step, so a run that starts again meanwhile stays.
 */
const trimRunScript = `
local indexed = redis.call('HGET', KEYS[1], 'indexed')
local sets = indexed and cjson.decode(indexed) or {}
for _, set in ipairs(sets) do
  if set == ARGV[2] then return 0 end
end
for _, set in ipairs(sets) do redis.call('ZREM', set, ARGV[1]) end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1])
return 1
`;

/**
 * Drops journal entries older than ARGV[1] (ISO) from the tail of the list KEYS[1] (oldest
 * last), at most ARGV[2] of them; resolves how many went. Lines are "<seq> <entry JSON>".
 */
const trimJournalScript = `
local n = 0
while n < tonumber(ARGV[2]) do
  local line = redis.call('LINDEX', KEYS[1], -1)
  if not line then break end
  local space = string.find(line, ' ', 1, true)
  local ok, entry = pcall(cjson.decode, string.sub(line, (space or 0) + 1))
  if ok and type(entry) == 'table' and type(entry.at) == 'string' and entry.at >= ARGV[1] then break end
  redis.call('RPOP', KEYS[1])
  n = n + 1
end
return n
`;

/**
 * Counts a finished run in its day's totals once (fleet-stats.ts): KEYS[1] the run's
 * "counted" marker, KEYS[2] the day's hash; ARGV[1] how long both are kept (seconds), the
 * rest the fields to add 1 to. 1 when counted now, 0 when it was already.
 */
const finishedScript = `
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then return 0 end
for i = 2, #ARGV do redis.call('HINCRBY', KEYS[2], ARGV[i], 1) end
redis.call('EXPIRE', KEYS[2], ARGV[1])
return 1
`;

/** The scripts, sent once and then called by their SHA (ioredis `defineCommand`). */
export const scripts = {
  cfSave: { numberOfKeys: 3, lua: saveScript },
  cfIndexRun: { numberOfKeys: 1, lua: indexRunScript },
  cfListWorkers: { numberOfKeys: 1, lua: listWorkersScript },
  cfJournal: { numberOfKeys: 2, lua: journalScript },
  cfAcquire: { numberOfKeys: 1, lua: acquireScript },
  cfRenew: { numberOfKeys: 1, lua: renewScript },
  cfFence: { numberOfKeys: 2, lua: fenceScript },
  cfRelease: { numberOfKeys: 1, lua: releaseScript },
  cfHandOver: { numberOfKeys: 2, lua: handOverScript },
  cfBindRequest: { numberOfKeys: 2, lua: bindRequestScript },
  cfTrimRun: { numberOfKeys: 2, lua: trimRunScript },
  cfTrimJournal: { numberOfKeys: 1, lua: trimJournalScript },
  cfFinished: { numberOfKeys: 2, lua: finishedScript },
} as const;

export type ScriptCalls = { [name in keyof typeof scripts]: (...args: (string | number)[]) => Promise<unknown> };

/** The scripts as a pipeline queues them. */
export type PipelineScriptCalls = { [name in keyof typeof scripts]: (...args: (string | number)[]) => unknown };
