-- GET /api/v1/stock-export with If-None-Match of the current version: 304, rotating keys.
dofile(os.getenv("WALKLIST_BENCH_DIR") .. "/keys.lua")
function request()
  local key = next_bench_key()
  return wrk.format("GET", "/api/v1/stock-export",
    { ["Authorization"] = "Bearer " .. key.token, ["If-None-Match"] = key.etag })
end
function response(status)
  if status ~= 304 then io.stderr:write("unexpected status " .. status .. "\n") end
end
