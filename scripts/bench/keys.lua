-- Shared by the wrk scripts: the benchmark keys (scripts/bench/setup_orgs.sql output, one
-- "token org_id etag" line each), from the file named by WALKLIST_BENCH_KEYS, and the rotation
-- of requests over them. Each wrk thread starts at another key and every request takes the
-- next one, so the requests spread over all organizations and no per-organization rate limit
-- is reached.
--
-- Every key's request is formatted once, in init (where wrk has set the Host header), and
-- answers go to no Lua callback: the client then costs about what pgbench costs per
-- transaction, on the same two cores as walklistd and PostgreSQL. walklistd's own metrics
-- count the answers of each status (scripts/bench.sh, answers_other_than).
local keys = {}
local path = os.getenv("WALKLIST_BENCH_KEYS")
for line in io.lines(path) do
  local token, org, etag = line:match("^(%S+) (%S+) (%S+)$")
  if token then keys[#keys + 1] = { token = token, org = org, etag = etag } end
end
assert(#keys > 0, "no keys in " .. tostring(path))

local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

-- MAKE(key) returns the formatted request (wrk.format) of one key.
function rotate_requests(make)
  local requests, at = {}, 0
  function init()
    for i, key in ipairs(keys) do requests[i] = make(key) end
    at = ((thread_number or 1) * 7919) % #requests
  end
  function request()
    at = at % #requests + 1
    return requests[at]
  end
end
