-- POST /api/v1/locate-lists with 20 codes, rotating over the benchmark organizations.
-- wrk -s scripts/bench/create.lua (WALKLIST_BENCH_KEYS names the keys file)
dofile(os.getenv("WALKLIST_BENCH_DIR") .. "/keys.lua")
local codes = {}
for i = 1, 20 do codes[i] = string.format('"SKU-%07d"', i * 37) end
local body = '{"name":"Bench walk","codes":[' .. table.concat(codes, ",") .. ']}'
rotate_requests(function(key)
  return wrk.format("POST", "/api/v1/locate-lists",
    { ["Authorization"] = "Bearer " .. key.token, ["Content-Type"] = "application/json" }, body)
end)
