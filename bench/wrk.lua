-- wrk script of the flagadmin benchmarks.
-- Environment: BENCH_METHOD (default GET), BENCH_AUTH (Authorization header, optional),
-- BENCH_PATHS (space-separated paths; with more than one, requests cycle through them).
-- done() prints one line "BENCH_JSON {...}" with exact figures, read by bench/loadgen.py.

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

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean))
end
