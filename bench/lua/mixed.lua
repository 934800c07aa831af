-- wrk script of bench/cases/traffic.py: the mixed case. Reads of the five operations in the
-- proportions of an admin UI (bench/README.md says why), one write every BENCH_WRITE_EVERY
-- requests rotating over a flag update, a SCIM user PATCH and a test delivery (a row of the 4.1
-- log), every request with Accept-Encoding: gzip (set BENCH_GZIP=1).
--
-- Environment: BENCH_AUTH (admin token: 4.1, 4.5, flag update, test delivery), BENCH_TOKENS
-- (file: users' tokens, rotating for 4.2 and 4.3), BENCH_VIEWER_TOKENS (file: tokens rotating
-- for 4.4), BENCH_INTEGRATION and BENCH_EVENTS (the log paged by 4.1), BENCH_LIMIT (50),
-- BENCH_FIRST_PAGES (percent of 4.1 reads on the first ten pages, the rest uniform over the
-- log), BENCH_WEIGHTS ("4.3=45,4.2=30,4.1=20,4.4=5": shares of the reads), BENCH_WRITE_EVERY
-- (100), BENCH_TOKEN_EVERY (1000: one 4.5 in that many requests, half-way between two writes),
-- BENCH_FLAGS (file of "project/flag" lines to update), BENCH_SCIM_USERS (file of SCIM user
-- ids), BENCH_SCIM_TOKEN (the SCIM token before the first 4.5), BENCH_TEST_INTEGRATION (id of
-- the webhook configuration whose test delivery is the third write), BENCH_TAG.
--
-- Every 4.5 revokes the SCIM token: the script takes the new one from its answer, and the
-- schedule keeps the SCIM PATCHes far from each 4.5. Far is not always enough (a 4.5 still
-- unanswered 50 requests later let a PATCH go with the revoked token: one 401 in each of two
-- rounds), so until the 4.5's answer is in, a SCIM PATCH's turn sends a flag update instead.
-- With several parts (processes), only part 0 sends 4.5 and the SCIM PATCHes (the others send
-- a 4.3 and a flag update in their places), since each part's wrk knows only its own token.

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local lib = dofile(dir .. "lib.lua")

local admin = lib.env("BENCH_AUTH")
local tag = lib.env("BENCH_TAG", "mix") .. "-" .. lib.part
local limit = tonumber(lib.env("BENCH_LIMIT", "50"))
local pages = math.max(1, tonumber(lib.env("BENCH_EVENTS")) - limit + 1)
local first_pages = tonumber(lib.env("BENCH_FIRST_PAGES", "50"))
local log_prefix = "/api/admin/addons/" .. lib.env("BENCH_INTEGRATION", "1") .. "/events?limit=" .. limit .. "&offset="
local write_every = tonumber(lib.env("BENCH_WRITE_EVERY", "100"))
local token_every = tonumber(lib.env("BENCH_TOKEN_EVERY", "1000"))
local test_path = "/api/admin/addons/" .. lib.env("BENCH_TEST_INTEGRATION", "1") .. "/test"
local scim_token = lib.env("BENCH_SCIM_TOKEN", "")
local token_pending = false -- a 4.5 sent and not answered yet
local solo = lib.part == 0

local admin_headers = lib.headers(admin)
local admin_json = lib.headers(admin, "application/json")

local function rotation(file)
  local list = {}
  for i, token in ipairs(lib.lines(file)) do
    list[i] = lib.headers(token)
  end
  local at = lib.start(list)
  return function()
    at = at % #list + 1
    return list[at]
  end
end

local user = rotation(lib.env("BENCH_TOKENS"))
local viewer = rotation(lib.env("BENCH_VIEWER_TOKENS"))
local flags = lib.lines(lib.env("BENCH_FLAGS"))
local scim_users = lib.lines(lib.env("BENCH_SCIM_USERS"))

-- Reads: cumulative weights, in the order given.
local reads, total = {}, 0
for name, weight in lib.env("BENCH_WEIGHTS", "4.3=45,4.2=30,4.1=20,4.4=5"):gmatch("([%d.]+)=(%d+)") do
  total = total + tonumber(weight)
  reads[#reads + 1] = { name = name, upto = total }
end

local read = {}
read["4.1"] = function(rand)
  local offset
  if rand(100) < first_pages then
    offset = limit * rand(10)
  else
    offset = rand(pages)
  end
  return wrk.format("GET", log_prefix .. offset, admin_headers)
end
read["4.2"] = function()
  return wrk.format("GET", "/api/admin/personal-dashboard", user())
end
read["4.3"] = function()
  return wrk.format("GET", "/api/admin/ui-config", user())
end
read["4.4"] = function()
  return wrk.format("GET", "/api/admin/archive/features", viewer())
end
local function generate_token()
  return wrk.format("POST", "/api/admin/scim-settings/generate-new-token", admin_headers)
end

local k, writes = 0, 0
local function flag_update()
  local target = flags[writes % #flags + 1]
  local project, name = target:match("([^/]+)/(.+)")
  local body = string.format('[{"op":"replace","path":"/description","value":"mix %s %d"}]', tag, k)
  return wrk.format("PATCH", "/api/admin/projects/" .. project .. "/features/" .. name, admin_json, body)
end
local function scim_patch()
  local id = scim_users[writes % #scim_users + 1]
  local body = '{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":' ..
    string.format('[{"op":"replace","path":"displayName","value":"Mix %s %d"}]}', tag, k)
  return wrk.format("PATCH", "/scim/v2/Users/" .. id, lib.headers("Bearer " .. scim_token, "application/scim+json"), body)
end
local function test_delivery()
  return wrk.format("POST", test_path, admin_headers)
end

local rand
init = function(args)
  rand = lib.random(lib.seed())
end

request = function()
  k = k + 1
  if k % write_every == 0 then
    writes = writes + 1
    local which = writes % 3
    if which == 0 then
      return test_delivery()
    elseif which == 1 and solo and not token_pending then
      return scim_patch()
    end
    return flag_update()
  end
  if token_every > 0 and k % token_every == math.floor(token_every / 2) + write_every / 2 then
    if solo then
      token_pending = true
      return generate_token()
    end
    return read["4.3"]()
  end
  local r = rand(total)
  for _, choice in ipairs(reads) do
    if r < choice.upto then
      return read[choice.name](rand)
    end
  end
end

response = function(status, headers, body)
  lib.note_status(status, body)
  if body and body:sub(1, 10) == '{"token":"' then
    scim_token = body:match('^{"token":"([^"]+)"') or scim_token
    token_pending = false
  end
end
