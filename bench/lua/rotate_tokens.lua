-- wrk script of bench/cases/traffic.py: one GET path, the Authorization header rotating over a list of
-- tokens, one per request (distinct users: spec 4.2, token checks with 4.3).
-- Environment: BENCH_PATH, BENCH_TOKENS (a file, one token per line), and lib.lua's BENCH_PART
-- (in rotation each part goes over every token, from its own start; with BENCH_ONCE, each part
-- takes every n-th token), BENCH_ONCE (each token once: set it to the share's length, with one
-- connection), BENCH_GZIP.

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local lib = dofile(dir .. "lib.lua")

local path = lib.env("BENCH_PATH")
-- each token once: this part's share; in rotation: the whole list, from this part's start
local once = tonumber(lib.env("BENCH_ONCE", "0")) > 0
local tokens = lib.lines(lib.env("BENCH_TOKENS"))
if once then
  tokens = lib.share(tokens)
end
local headers = {}
for i, token in ipairs(tokens) do
  headers[i] = lib.headers(token)
end
local next_token = once and 0 or lib.start(headers)

request = function()
  next_token = next_token % #headers + 1
  return wrk.format("GET", path, headers[next_token])
end
