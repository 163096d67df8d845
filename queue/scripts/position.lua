-- position: a queued job's 1-based place in its team's queue, O(log n)
-- (ZRANK on a sorted set). KEYS[1] job hash  KEYS[2] team queue
-- Returns the position, or 0 if the job is not queued.
local member = redis.call('HGET', KEYS[1], 'member')
if not member then
  return 0
end
local rank = redis.call('ZRANK', KEYS[2], member)
if not rank then
  return 0
end
return rank + 1
