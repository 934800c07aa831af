-- wrk script of bench/cases/traffic.py: one kind of write, every request a new change.
-- Environment: BENCH_KIND, BENCH_AUTH (the admin token, or "Bearer <SCIM token>" for the SCIM
-- kinds), BENCH_TAG (unique per run: new names never collide with earlier runs), and lib.lua's
-- BENCH_PART, BENCH_GZIP. Kinds:
--   flag-create       POST /api/admin/projects/BENCH_PROJECT/features, a new name each time (201)
--   flag-archive      DELETE /api/admin/projects/BENCH_PROJECT/features/BENCH_SUPPLY_PREFIX-<m>,
--                     m = 0, 1, ... over BENCH_SUPPLY live flags made before the run (202)
--   scim-user-create  POST /scim/v2/Users, a new userName each time (201)
--   scim-group-patch  PATCH /scim/v2/Groups/<id>, adding one member: the m-th request adds user
--                     BENCH_USERS[m mod U] to group BENCH_GROUPS[m div U mod G] (files, one id per
--                     line), so that every request adds a member the group did not have (204)
--   scim-token        POST /api/admin/scim-settings/generate-new-token (200)
-- With n parts, part i takes m = i, i + n, i + 2n, ...

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local lib = dofile(dir .. "lib.lua")

local kind = lib.env("BENCH_KIND")
local auth = lib.env("BENCH_AUTH")
local tag = lib.env("BENCH_TAG", "t") .. "-" .. lib.part
local project = lib.env("BENCH_PROJECT", "default")
local json_headers = lib.headers(auth, "application/json")
local scim_headers = lib.headers(auth, "application/scim+json")
local plain_headers = lib.headers(auth)
local m = lib.part - lib.parts

local function next_m()
  m = m + lib.parts
  return m
end

local builders = {}

builders["flag-create"] = function()
  local body = string.format('{"name":"%s-%d","type":"release"}', tag, next_m())
  return wrk.format("POST", "/api/admin/projects/" .. project .. "/features", json_headers, body)
end

local supply_prefix = lib.env("BENCH_SUPPLY_PREFIX", "supply")
builders["flag-archive"] = function()
  local path = string.format("/api/admin/projects/%s/features/%s-%d", project, supply_prefix, next_m())
  return wrk.format("DELETE", path, plain_headers)
end

builders["scim-user-create"] = function()
  local name = string.format("%s-%d", tag, next_m())
  local body = '{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"' .. name ..
    '","name":{"givenName":"Bench","familyName":"' .. name .. '"},"emails":[{"primary":true,' ..
    '"value":"' .. name .. '@example.com","type":"work"}],"active":true}'
  return wrk.format("POST", "/scim/v2/Users", scim_headers, body)
end

local users, groups
builders["scim-group-patch"] = function()
  local i = next_m()
  local user = users[i % #users + 1]
  local group = groups[math.floor(i / #users) % #groups + 1]
  local body = '{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":' ..
    '[{"op":"add","path":"members","value":[{"value":"' .. user .. '"}]}]}'
  return wrk.format("PATCH", "/scim/v2/Groups/" .. group, scim_headers, body)
end

builders["scim-token"] = function()
  return wrk.format("POST", "/api/admin/scim-settings/generate-new-token", plain_headers)
end

if kind == "scim-group-patch" then
  users = lib.lines(lib.env("BENCH_USERS"))
  groups = lib.lines(lib.env("BENCH_GROUPS"))
end

request = builders[kind]
if request == nil then
  error("unknown BENCH_KIND " .. tostring(kind))
end
