-- Lists over the cities (bench/lib/cities.ts) whose query changes every request:
-- every request draws its parameters at random and ends with `&run=<n>` (n counting up), so no
-- two query strings are alike and the server's page cache never answers.
--   wrk -s bench/wrk/cities-lists.lua URL -- relation CC,CC,… T,T,…   relation filter + indexed sort:
--       ?filter=country.code = 'CC' && population > T&sort=-population&perPage=20 (with totals)
--   wrk -s bench/wrk/cities-lists.lua URL -- literals CC,CC,…   the same filter with T drawn from
--       0..999999: a filter text new to the server at almost every request (compiled per shape)
--   wrk -s bench/wrk/cities-lists.lua URL -- deep PAGES   a random offset page, with totals:
--       ?sort=name&page=<1..PAGES>&perPage=20
local mode
local codes = {}
local thresholds = {}
local pages = 1
local n = 0

local function split(s)
  local out = {}
  for part in string.gmatch(s, "[^,]+") do out[#out + 1] = part end
  return out
end

function init(args)
  mode = args[1]
  if mode == "relation" or mode == "literals" then
    codes = split(args[2])
    thresholds = split(args[3] or "")
  else
    pages = tonumber(args[2])
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end

function request()
  n = n + 1
  local q
  if mode == "relation" or mode == "literals" then
    local cc = codes[math.random(1, #codes)]
    local t = mode == "literals" and math.random(0, 999999) or thresholds[math.random(1, #thresholds)]
    -- country.code = 'CC' && population > T, URL-encoded
    q = "filter=country.code%20%3D%20%27" .. cc .. "%27%20%26%26%20population%20%3E%20" .. t .. "&sort=-population&perPage=20"
  else
    q = "sort=name&page=" .. math.random(1, pages) .. "&perPage=20"
  end
  return wrk.format(nil, wrk.path .. "?" .. q .. "&run=" .. n)
end
