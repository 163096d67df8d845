-- requeue: put an admitted (preempted) job back in its queue at its
-- original place: its hash's sort prefix still holds its first queue time.
-- KEYS[1] job hash  KEYS[2] team queue  ARGV[1] uid
-- Returns {state, member} (state 'queued'), or {'missing', ''}.
local sort = redis.call('HGET', KEYS[1], 'sort')
if not sort then
  return {'missing', ''}
end
redis.call('ZADD', KEYS[2], 0, sort .. ARGV[1])
return {'queued', sort .. ARGV[1]}
