-- GET /api/v1/locate-lists/{id} of each organization's benchmark list ("bench-<org_id>", made by
-- scripts/bench.sh), rotating keys.
dofile(os.getenv("WALKLIST_BENCH_DIR") .. "/keys.lua")
rotate_requests(function(key)
  return wrk.format("GET", "/api/v1/locate-lists/bench-" .. key.org,
    { ["Authorization"] = "Bearer " .. key.token })
end)
