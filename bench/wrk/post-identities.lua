-- POSTs {"identity": "<PREFIX><n>@<DOMAIN>"} to the URL's path, n cycling over 0..COUNT-1.
--   wrk -s bench/wrk/post-identities.lua URL -- PREFIX DOMAIN COUNT
local prefix, domain, count
local i = 0

function init(args)
  prefix = args[1]
  domain = args[2]
  count = tonumber(args[3])
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  i = i + 1
  return wrk.format(nil, nil, nil, '{"identity":"' .. prefix .. (i % count) .. '@' .. domain .. '"}')
end
