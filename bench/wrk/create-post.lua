-- Creates posts: POST to the URL's path with a unique JSON body per request (a counter plus a
-- run tag make every title unique), authenticated with the -H Authorization header.
--   wrk -s bench/wrk/create-post.lua -H 'Authorization: Bearer …' URL -- AUTHOR_ID RUN_TAG
local author, tag
local counter = 0
local description = string.rep("Created under load by the wrk create scenario of the svc benchmark. ", 7)

function init(args)
  author = args[1]
  tag = args[2] or "run"
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  local body = '{"title":"wrk ' .. tag .. ' post ' .. counter .. '","description":"' .. description ..
    '","public":' .. ((counter % 2 == 0) and 'true' or 'false') ..
    ',"tags":["news","tech"],"author":"' .. author .. '"}'
  return wrk.format(nil, nil, nil, body)
end
