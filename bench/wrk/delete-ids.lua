-- Deletes records by id: DELETE BASE_PATH<id>, walking the ids listed one per line in IDS_FILE,
-- each id once. When the list runs out every further request targets a missing id (404, counted
-- by wrk as non-2xx), so an exhausted list shows up as errors instead of silently skewing the rate.
--   wrk -s bench/wrk/delete-ids.lua -H 'Authorization: Bearer …' URL -- BASE_PATH IDS_FILE
local base
local ids = {}
local n, i = 0, 0

function init(args)
  base = args[1]
  for line in io.lines(args[2]) do
    if line ~= "" then
      n = n + 1
      ids[n] = line
    end
  end
  wrk.method = "DELETE"
end

function request()
  i = i + 1
  local id = (i <= n) and ids[i] or "exhausted000000"
  return wrk.format(nil, base .. id)
end
