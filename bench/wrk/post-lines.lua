-- POSTs the JSON bodies listed one per line in BODIES_FILE to the URL's path, each once. When the
-- list runs out every further request sends "{}" (an error, counted by wrk as non-2xx), so an
-- exhausted list shows up as errors instead of silently skewing the rate.
--   wrk -s bench/wrk/post-lines.lua URL -- BODIES_FILE
local bodies = {}
local n, i = 0, 0

function init(args)
  for line in io.lines(args[1]) do
    if line ~= "" then
      n = n + 1
      bodies[n] = line
    end
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  i = i + 1
  return wrk.format(nil, nil, nil, (i <= n) and bodies[i] or "{}")
end
