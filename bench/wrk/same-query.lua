-- GET of the given URL with `&run=0` appended to every request: the twin of distinct-query.lua
-- (the same request building in wrk, the same URL length), whose query string always repeats, so
-- the server's page cache answers all but the first.
--   wrk -s bench/wrk/same-query.lua URL
function request()
  return wrk.format(nil, wrk.path .. "&run=0")
end
