-- Shared pieces of the wrk scripts of bench/cases/traffic.py (loaded with dofile by each of them).
--
-- Environment read here:
--   BENCH_PART   "i n": this wrk drives part i (0-based) of n servers (engines: two processes);
--                each script takes its share of tokens, names and random streams from it.
--   BENCH_SEED   base seed of the random generator (default 1).
--   BENCH_ONCE   a number N: after N responses, print the line BENCH_STOP (bench/loadgen.py then
--                interrupts wrk) and stop this thread.
--   BENCH_GZIP   "1": every request carries Accept-Encoding: gzip.
-- done() prints one line "BENCH_JSON {...}" with exact figures (bench/wrk.lua uses it too).
-- wrk calls request() once before the run, to check it, and discards that request: a script
-- that counts its requests skips its first number.

local lib = {}

function lib.env(name, default)
  local value = os.getenv(name)
  if value == nil or value == "" then
    return default
  end
  return value
end

-- The non-empty lines of a file, in order.
function lib.lines(path)
  local out = {}
  for line in io.lines(path) do
    if line ~= "" then
      out[#out + 1] = line
    end
  end
  return out
end

-- This process's part: i (0-based) and n.
local part_text = lib.env("BENCH_PART", "0 1")
lib.part, lib.parts = part_text:match("(%d+)%s+(%d+)")
lib.part, lib.parts = tonumber(lib.part), tonumber(lib.parts)

-- The items of list whose position is congruent to this part (every n-th, from the i-th).
function lib.share(list)
  if lib.parts == 1 then
    return list
  end
  local out = {}
  for i = lib.part + 1, #list, lib.parts do
    out[#out + 1] = list[i]
  end
  return out
end

-- Where this part starts rotating over a list that every part uses whole: spread evenly, so
-- that the processes ask for different items at the same moment.
function lib.start(list)
  return math.floor(#list * lib.part / lib.parts)
end

-- A deterministic generator (Park and Miller's minimal standard, exact in doubles):
-- rand(n) returns an integer in [0, n). Same seed, same sequence, whatever the Lua.
function lib.random(seed)
  local state = seed % 2147483646 + 1
  return function(n)
    state = (state * 16807) % 2147483647
    return state % n
  end
end

-- The seed of this wrk thread: BENCH_SEED, the part, and the thread's number (wrk runs one Lua
-- state per thread and tells request() nothing about the connection, so a stream per thread is
-- the finest wrk allows; with -t1, as bench/loadgen.py runs it, one stream per process).
local thread_number = 0
function setup(thread)
  thread_number = thread_number + 1
  thread:set("bench_thread", thread_number)
end

function lib.seed()
  return tonumber(lib.env("BENCH_SEED", "1")) * 7919 + lib.part * 104729 + (bench_thread or 1)
end

-- Headers of a request: Accept, Accept-Encoding when BENCH_GZIP, Authorization.
local gzip = lib.env("BENCH_GZIP", "0") == "1"
function lib.headers(auth, content_type)
  local h = { ["Accept"] = "application/json" }
  if gzip then
    h["Accept-Encoding"] = "gzip"
  end
  if auth and auth ~= "" then
    h["Authorization"] = auth
  end
  if content_type then
    h["Content-Type"] = content_type
  end
  return h
end

-- BENCH_ONCE: count responses, stop after N. Scripts that define their own response() call
-- lib.count_response() from it.
local once = tonumber(lib.env("BENCH_ONCE", "0"))
local answered = 0
function lib.count_response()
  answered = answered + 1
  if answered == once then
    io.write("BENCH_STOP\n")
    io.flush()
    wrk.thread:stop()
  end
end
if once > 0 then
  response = function(status, headers, body)
    lib.count_response()
  end
end

-- Scripts that define response() call lib.note_status(status, body) from it: the first few
-- answers outside 2xx/3xx are printed ("BENCH_ERROR <status> <body's start>") into wrk's
-- output, which the bench keeps in its wrk log, so that an error counted is also explained.
local noted = 0
function lib.note_status(status, body)
  if status >= 400 and noted < 5 then
    noted = noted + 1
    io.write(string.format("BENCH_ERROR %d %s\n", status, ((body or ""):sub(1, 300):gsub("\n", " "))))
    io.flush()
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

return lib
