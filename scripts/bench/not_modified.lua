-- GET /api/v1/stock-export with If-None-Match of the current version: 304, rotating keys.
dofile(os.getenv("WALKLIST_BENCH_DIR") .. "/keys.lua")
rotate_requests(function(key)
  return wrk.format("GET", "/api/v1/stock-export",
    { ["Authorization"] = "Bearer " .. key.token, ["If-None-Match"] = key.etag })
end)
