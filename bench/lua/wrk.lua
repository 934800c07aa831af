-- wrk script of the flagadmin benchmarks.
-- Environment: BENCH_METHOD (default GET), BENCH_AUTH (Authorization header, optional),
-- BENCH_PATHS (space-separated paths; with more than one, requests cycle through them).
-- done() prints one line "BENCH_JSON {...}" with exact figures, read by bench/loadgen.py: the
-- one of lib.lua, shared with the scripts of bench/cases/traffic.py.

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "lib.lua")

wrk.method = os.getenv("BENCH_METHOD") or "GET"
wrk.headers["Accept"] = "application/json"
local auth = os.getenv("BENCH_AUTH")
if auth and auth ~= "" then
  wrk.headers["Authorization"] = auth
end

local paths = {}
for p in string.gmatch(os.getenv("BENCH_PATHS") or "", "%S+") do
  table.insert(paths, p)
end
if #paths > 1 then
  local i = 0
  request = function()
    i = i + 1
    return wrk.format(nil, paths[(i - 1) % #paths + 1])
  end
end
