-- wrk script of bench/cases/traffic.py: spec 4.1 at a random offset per request over the whole log.
-- Environment: BENCH_AUTH (Authorization), BENCH_INTEGRATION (the configuration's id),
-- BENCH_EVENTS (events in its log), BENCH_LIMIT (page size, default 50), and lib.lua's
-- BENCH_SEED, BENCH_PART, BENCH_GZIP. Offsets are uniform over 0 .. events - limit, from a
-- deterministic generator seeded per wrk thread and part (see lib.lua).

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local lib = dofile(dir .. "lib.lua")

local headers = lib.headers(lib.env("BENCH_AUTH"))
local limit = tonumber(lib.env("BENCH_LIMIT", "50"))
local pages = math.max(1, tonumber(lib.env("BENCH_EVENTS")) - limit + 1)
local prefix = "/api/admin/addons/" .. lib.env("BENCH_INTEGRATION", "1") .. "/events?limit=" .. limit .. "&offset="
local rand

init = function(args)
  rand = lib.random(lib.seed())
end

request = function()
  return wrk.format("GET", prefix .. rand(pages), headers)
end
