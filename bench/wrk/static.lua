-- One fixed request with a method and an optional JSON body, built once (no per-request Lua).
--   wrk -s bench/wrk/static.lua [-H 'Authorization: Bearer …'] URL -- METHOD [BODY]
-- Used for auth-refresh (POST, no body) and auth-with-password (POST {identity, password}).
function init(args)
  wrk.method = args[1] or "GET"
  if args[2] and args[2] ~= "" then
    wrk.body = args[2]
    wrk.headers["Content-Type"] = "application/json"
  elseif wrk.method ~= "GET" then
    wrk.headers["Content-Length"] = "0"
  end
end
