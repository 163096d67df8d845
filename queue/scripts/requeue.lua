-- requeue: put an admitted (preempted) job back in its queue at its
-- original place: its member still holds its first queue time.
-- KEYS[1] job hash  KEYS[2] team queue
-- Returns {state, member} (state 'queued'), or {'missing', ''}.
local member = redis.call('HGET', KEYS[1], 'member')
if not member then
  return {'missing', ''}
end
redis.call('HSET', KEYS[1], 'state', 'queued')
redis.call('ZADD', KEYS[2], 0, member)
return {'queued', member}
