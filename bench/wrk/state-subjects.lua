-- GET of the URL with `?subject=s<k>`, k cycling through SUBJECTS distinct subjects (default 5000):
-- the state route resolves flags and experiments for many subjects, as a site's visitors do.
--   wrk -s bench/wrk/state-subjects.lua URL -- SUBJECTS
local n, subjects = 0, 5000
function init(args)
  subjects = tonumber(args[1]) or 5000
end
function request()
  n = n + 1
  return wrk.format(nil, wrk.path .. "?subject=s" .. (n % subjects))
end
