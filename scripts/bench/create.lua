-- POST /api/v1/locate-lists with 20 codes, rotating over the benchmark organizations.
-- wrk -s scripts/bench/create.lua (WALKLIST_BENCH_KEYS names the keys file)
dofile(os.getenv("WALKLIST_BENCH_DIR") .. "/keys.lua")
local codes = {}
for i = 1, 20 do codes[i] = string.format('"SKU-%07d"', i * 37) end
local body = '{"name":"Bench walk","codes":[' .. table.concat(codes, ",") .. ']}'
function request()
  local key = next_bench_key()
  return wrk.format("POST", "/api/v1/locate-lists",
    { ["Authorization"] = "Bearer " .. key.token, ["Content-Type"] = "application/json" }, body)
end
function response(status)
  if status ~= 201 then io.stderr:write("unexpected status " .. status .. "\n") end
end
