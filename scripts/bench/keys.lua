-- Shared by the wrk scripts: the benchmark keys (scripts/bench/setup_orgs.sql output, one
-- "token org_id etag" line each), from the file named by WALKLIST_BENCH_KEYS. Each wrk
-- thread starts at another offset and every request takes the next key, so the requests
-- spread over all organizations and no per-organization rate limit is reached.
local keys = {}
local path = os.getenv("WALKLIST_BENCH_KEYS")
for line in io.lines(path) do
  local token, org, etag = line:match("^(%S+) (%S+) (%S+)$")
  if token then keys[#keys + 1] = { token = token, org = org, etag = etag } end
end
assert(#keys > 0, "no keys in " .. tostring(path))
local next_key = math.random(#keys)

function next_bench_key()
  next_key = next_key % #keys + 1
  return keys[next_key]
end
