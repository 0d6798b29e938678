-- GET of the given URL's path with a random whole number spliced in: the path is
-- `<URL path><before><n><after>`, n drawn uniformly from 0..max per request, so nearly every
-- query string (and filter value) is new to the server.
--   wrk -s bench/wrk/random-threshold.lua URL -- <before> <after> <max>
-- `before` and `after` are already URL-encoded; `after` may be "-" for none.
local before, after, max = "", "", 100000
function init(args)
  before = args[1] or ""
  after = args[2] or ""
  if after == "-" then after = "" end
  max = tonumber(args[3] or "100000")
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end
function request()
  return wrk.format(nil, wrk.path .. before .. math.random(0, max) .. after)
end
