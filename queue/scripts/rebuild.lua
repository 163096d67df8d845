-- rebuild: make a cohort's keys exactly the state computed from the
-- Kubernetes objects (DESIGN §6: objects are the truth; Redis is rebuilt
-- when it is empty or disagrees). Every key the script touches is in KEYS
-- (Redis Cluster: one cohort, one slot). ARGV[1] is JSON:
--   {"del": [i, ...],                      keys to delete first
--    "hash": [[i, field, value, ...], ...], hashes to write
--    "zset": [[i, member, ...], ...],       sorted sets (score 0) to write
--    "ver": i}                              the version key to bump
-- (i: 1-based indices into KEYS). Returns the new version.
local spec = cjson.decode(ARGV[1])
for _, i in ipairs(spec.del) do
  redis.call('DEL', KEYS[i])
end
for _, h in ipairs(spec.hash) do
  local args = {}
  for j = 2, #h do args[#args + 1] = h[j] end
  redis.call('DEL', KEYS[h[1]])
  if #args > 0 then
    redis.call('HSET', KEYS[h[1]], unpack(args))
  end
end
for _, z in ipairs(spec.zset) do
  redis.call('DEL', KEYS[z[1]])
  for j = 2, #z do
    redis.call('ZADD', KEYS[z[1]], 0, z[j])
  end
end
return redis.call('INCR', KEYS[spec.ver])
