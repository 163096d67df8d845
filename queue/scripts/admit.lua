-- admit: take a queued job out of its queue and record its admission,
-- if the cohort's ledger is still the one the decision was made on.
-- KEYS[1] cohort version  KEYS[2] team queue
-- KEYS[3] admission record (job uid, attempt)  KEYS[4] team usage hash
-- ARGV: expected_version member flavor gpus team
-- The job hash is not read: the controller passes the job's member (it
-- has priority, queue time and uid), and "queued" means "in the team's
-- queue", so an admission touches only the queue, the record, the usage
-- and the version (bench/README.md: each cold key costs at 1M jobs).
-- The quota arithmetic (nominal, borrowing and lending limits, the pool)
-- runs in C over the controller's copy of the ledger (decide/quota.c);
-- this script only applies the decision atomically. A ledger changed
-- meanwhile (another admission or release: the version moved) refuses,
-- so two clients racing for the last GPUs never both succeed.
-- Returns {'ok', version} | {'stale', version} | {'dup', version} |
--         {'missing', version}.
local ver = tonumber(redis.call('GET', KEYS[1]) or '0')
if redis.call('EXISTS', KEYS[3]) == 1 then
  return {'dup', ver}
end
if ver ~= tonumber(ARGV[1]) then
  return {'stale', ver}
end
if redis.call('ZREM', KEYS[2], ARGV[2]) == 0 then
  return {'missing', ver}
end
redis.call('HSET', KEYS[3], 'flavor', ARGV[3], 'gpus', ARGV[4], 'team', ARGV[5])
redis.call('HINCRBY', KEYS[4], ARGV[3], tonumber(ARGV[4]))
ver = redis.call('INCR', KEYS[1])
return {'ok', ver}
