-- Updates random seeded posts: PATCH BASE_PATH<id> with a new title. Seeded ids are
-- PREFIX + 10-digit index (bench/lib/seed.ts postId), so no id list is needed.
--   wrk -s bench/wrk/update-post.lua -H 'Authorization: Bearer …' URL -- BASE_PATH PREFIX COUNT
local base, prefix, count
local counter = 0

function init(args)
  base = args[1]
  prefix = args[2]
  count = tonumber(args[3])
  wrk.headers["Content-Type"] = "application/json"
  math.randomseed(os.time())
end

function request()
  counter = counter + 1
  local id = string.format("%s%010d", prefix, math.random(0, count - 1))
  return wrk.format("PATCH", base .. id, nil, '{"title":"updated under load ' .. counter .. '"}')
end
