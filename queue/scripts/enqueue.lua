-- enqueue: add a job to its team's queue, idempotently.
-- KEYS[1] job hash  KEYS[2] team queue (sorted set)
-- ARGV: uid team ns name sort
-- sort is the member's prefix (priority inverted, then queue time, in
-- fixed-width hex); the member is sort .. uid. Members sort by bytes (all
-- scores 0), so the order is exact, with no double-precision collisions.
-- A job already known keeps its original sort prefix (priority, queue
-- time), so a controller restart or a repeated event changes nothing; its
-- state is derived: queued while its member is in the queue, else
-- admitted (admit.lua takes it out; remove.lua forgets it).
-- Returns {state, member}.
local sort = redis.call('HGET', KEYS[1], 'sort')
if sort then
  local member = sort .. ARGV[1]
  if redis.call('ZSCORE', KEYS[2], member) then
    return {'queued', member}
  end
  return {'admitted', member}
end
redis.call('HSET', KEYS[1], 'team', ARGV[2], 'ns', ARGV[3], 'name', ARGV[4],
           'sort', ARGV[5])
redis.call('ZADD', KEYS[2], 0, ARGV[5] .. ARGV[1])
return {'queued', ARGV[5] .. ARGV[1]}
