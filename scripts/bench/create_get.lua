-- GET /api/v1/locate-lists?name=&codes= (the URL-only creation form), 20 codes, rotating keys.
dofile(os.getenv("WALKLIST_BENCH_DIR") .. "/keys.lua")
local codes = {}
for i = 1, 20 do codes[i] = string.format("SKU-%07d", i * 41) end
local path = "/api/v1/locate-lists?name=Bench+walk&codes=" .. table.concat(codes, ",")
rotate_requests(function(key)
  return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. key.token })
end)
