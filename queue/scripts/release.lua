-- release: give an admission's GPUs back, exactly once.
-- KEYS[1] cohort version  KEYS[2] admission record  KEYS[3] team usage hash
-- Usage is derived from admission records: the record is deleted with
-- the decrement, so a second release finds nothing and changes nothing
-- (DESIGN §4 invariant 3). Returns {'released'|'absent', version}.
local flavor = redis.call('HGET', KEYS[2], 'flavor')
if not flavor then
  return {'absent', tonumber(redis.call('GET', KEYS[1]) or '0')}
end
local gpus = tonumber(redis.call('HGET', KEYS[2], 'gpus'))
redis.call('DEL', KEYS[2])
if redis.call('HINCRBY', KEYS[3], flavor, -gpus) <= 0 then
  redis.call('HDEL', KEYS[3], flavor)
end
return {'released', redis.call('INCR', KEYS[1])}
