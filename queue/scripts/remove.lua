-- remove: forget a job (deleted, or finished): out of its queue, its
-- hash gone. Admission records are released separately (release.lua), so
-- a job removed while admitted keeps its GPUs counted until released.
-- KEYS[1] job hash  KEYS[2] team queue  ARGV[1] uid
-- Returns 1 if the job was known, 0 if not.
local sort = redis.call('HGET', KEYS[1], 'sort')
if not sort then
  return 0
end
redis.call('ZREM', KEYS[2], sort .. ARGV[1])
redis.call('DEL', KEYS[1])
return 1
