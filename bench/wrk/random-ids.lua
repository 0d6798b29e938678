-- GET BASE_PATH<id> over the ids listed one per line in IDS_FILE:
--   wrk -s bench/wrk/random-ids.lua URL -- BASE_PATH IDS_FILE random   an id drawn at random a request
--   wrk -s bench/wrk/random-ids.lua URL -- BASE_PATH IDS_FILE walk [START]   each id once, in file
--       order from the one after START (default 0)
-- `walk` reads ids the server has not read before (a shuffled file, a fresh window a run), so the
-- record cache misses; when the list runs out, the walk starts over.
local base, mode
local ids = {}
local n, i = 0, 0

function init(args)
  base, mode = args[1], args[3] or "random"
  i = tonumber(args[4] or "0")
  for line in io.lines(args[2]) do
    if line ~= "" then
      n = n + 1
      ids[n] = line
    end
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end

function request()
  local id
  if mode == "walk" then
    i = i % n + 1
    id = ids[i]
  else
    id = ids[math.random(n)]
  end
  return wrk.format(nil, base .. id)
end
