-- wrk script of bench/probes/clarity_debt.py: one kind of request, repeated.
-- Environment: PROBE_KIND (get, create, archive), PROBE_AUTH (Authorization header), PROBE_PATH,
-- PROBE_TAG (the flags' name prefix: creates make <tag>-<n>, archives take <tag>-0, <tag>-1, ...
-- from a supply the probe inserted before the run). wrk -t1: one Lua state, so n is unique.

local kind = os.getenv("PROBE_KIND") or "get"
local path = os.getenv("PROBE_PATH")
local tag = os.getenv("PROBE_TAG") or "t"
wrk.headers["Accept"] = "application/json"
wrk.headers["Authorization"] = os.getenv("PROBE_AUTH")
local n = -1

if kind == "create" then
  wrk.headers["Content-Type"] = "application/json"
  request = function()
    n = n + 1
    return wrk.format("POST", path, nil, string.format('{"name":"%s-%d","type":"release"}', tag, n))
  end
elseif kind == "archive" then
  request = function()
    n = n + 1
    return wrk.format("DELETE", string.format("%s/%s-%d", path, tag, n))
  end
end
