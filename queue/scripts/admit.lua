-- admit: take a queued job out of its queue and record its admission,
-- if the cohort's ledger is still the one the decision was made on.
-- KEYS[1] cohort version  KEYS[2] job hash  KEYS[3] team queue
-- KEYS[4] admission record (job uid, attempt)  KEYS[5] team usage hash
-- ARGV: expected_version flavor gpus attempt
-- The quota arithmetic (nominal, borrowing and lending limits, the pool)
-- runs in C over the controller's copy of the ledger (queue/quota.c);
-- this script only applies the decision atomically. A ledger changed
-- meanwhile (another admission or release: the version moved) refuses,
-- so two clients racing for the last GPUs never both succeed.
-- Returns {'ok', version} | {'stale', version} | {'dup', version} |
--         {'missing', version}.
local ver = tonumber(redis.call('GET', KEYS[1]) or '0')
if redis.call('EXISTS', KEYS[4]) == 1 then
  return {'dup', ver}
end
if ver ~= tonumber(ARGV[1]) then
  return {'stale', ver}
end
local job = redis.call('HMGET', KEYS[2], 'member', 'state', 'team')
if not job[1] or job[2] ~= 'queued' then
  return {'missing', ver}
end
redis.call('ZREM', KEYS[3], job[1])
redis.call('HSET', KEYS[2], 'state', 'admitted', 'attempt', ARGV[4])
redis.call('HSET', KEYS[4], 'flavor', ARGV[2], 'gpus', ARGV[3], 'team', job[3])
redis.call('HINCRBY', KEYS[5], ARGV[2], tonumber(ARGV[3]))
ver = redis.call('INCR', KEYS[1])
return {'ok', ver}
