-- GET of the given URL with `&run=<n>` appended, n counting up per request, so no two requests
-- share a query string: the server's page cache never answers, and the figure is the cost of
-- running the list query. The server ignores the unknown `run` parameter.
--   wrk -s bench/wrk/distinct-query.lua URL
local n = 0
function request()
  n = n + 1
  return wrk.format(nil, wrk.path .. "&run=" .. n)
end
