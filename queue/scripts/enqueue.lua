-- enqueue: add a job to its team's queue, idempotently.
-- KEYS[1] job hash  KEYS[2] team queue (sorted set)
-- ARGV: uid team ns name member queued_ms
-- A job already known keeps its original member (priority, queue time),
-- so a controller restart or a repeated event changes nothing. Members
-- sort by bytes (all scores 0): the member encodes priority (inverted),
-- queue time and uid exactly, with no double-precision collisions.
-- Returns {state, member}.
local state = redis.call('HGET', KEYS[1], 'state')
if state then
  return {state, redis.call('HGET', KEYS[1], 'member')}
end
redis.call('HSET', KEYS[1], 'team', ARGV[2], 'ns', ARGV[3], 'name', ARGV[4],
           'member', ARGV[5], 'qt', ARGV[6], 'state', 'queued')
redis.call('ZADD', KEYS[2], 0, ARGV[5])
return {'queued', ARGV[5]}
