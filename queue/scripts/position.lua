-- position: a queued job's 1-based place in its team's queue, O(log n)
-- (ZRANK on a sorted set). KEYS[1] job hash  KEYS[2] team queue
-- ARGV[1] uid. Returns the position, or 0 if the job is not queued.
local sort = redis.call('HGET', KEYS[1], 'sort')
if not sort then
  return 0
end
local rank = redis.call('ZRANK', KEYS[2], sort .. ARGV[1])
if not rank then
  return 0
end
return rank + 1
