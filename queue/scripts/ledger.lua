-- ledger: read a cohort's ledger at one instant: its version and each
-- team's usage (flavor -> GPUs), in one round trip. The controller
-- decides admissions on this copy (decide/quota.c) and admit.lua applies a
-- decision only while the version is unchanged.
-- KEYS[1] cohort version  KEYS[2..n] the teams' usage hashes
-- Returns {version, {flavor, gpus, ...}, ...} (one list per usage key).
local out = {tonumber(redis.call('GET', KEYS[1]) or '0')}
for i = 2, #KEYS do
  out[#out + 1] = redis.call('HGETALL', KEYS[i])
end
return out
