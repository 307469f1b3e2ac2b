"""WatchStock at scale over gRPC (grpcio's asyncio API), against one walklistd at the specified
rate limits: STREAMS idle streams spread evenly over ORGS organizations (each organization's
streams stay within its stock-export bucket), walklistd's resident memory per stream, then
CHANGES stock changes, one at a time, each to the next organization in turn: the time from
SetStock's answer (the change committed) to the first and to the last of that organization's
watchers receiving it, p50 and p99 over the changes. Started by `run.sh WORKDIR watch` (see
run.sh); a figure for scripts/bench.sh, not a test."""
import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_grpc as t  # noqa: E402  (the same harness: walklistd, stubs)
import grpc  # noqa: E402

STREAMS = int(os.environ.get("WALKLIST_WATCH_STREAMS", "10000"))
ORGS = int(os.environ.get("WALKLIST_WATCH_ORGS", "400"))
CHANGES = int(os.environ.get("WALKLIST_WATCH_CHANGES", "40"))
CHANNELS = 20  # HTTP/2 connections the streams are spread over
SETUP_ORGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                          "bench", "setup_orgs.sql")


def organizations():
    """ORGS organizations, each with a key (stock:read) made as scripts/bench.sh makes them, a
    warehouse and a product, and a key that may write stock: [(org_id, read_key, write_key)]."""
    out = t.subprocess.run([t.PSQL, "-X", "-q", "-tA", "-F", " ", "-v", "ON_ERROR_STOP=1",
                            "-v", f"orgs={ORGS}", "-v", "set=ws", "-f", SETUP_ORGS, t.CONNINFO],
                           check=True, capture_output=True, text=True).stdout
    keys = [line.split() for line in out.splitlines() if line.startswith("wlk_")]
    t.sql("INSERT INTO warehouses (org_id, code, name, kind) SELECT org_id, 'W1', 'Main', 'own'"
          " FROM organizations WHERE slug LIKE 'ws-%'")
    t.sql("INSERT INTO products (org_id, sku, name) SELECT org_id, 'SKU-1', 'Watched'"
          " FROM organizations WHERE slug LIKE 'ws-%'")
    slugs = dict(t.sql("SELECT org_id, slug FROM organizations WHERE slug LIKE 'ws-%'"))
    return [(int(org_id), token, t.key(slugs[org_id], "inventory:write"))
            for token, org_id, _ in keys]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def watch(stub, token, org_id, ready, arrivals):
    """One stream: counts itself ready at its first message, then notes when each change (the
    quantity it sets) arrives."""
    call = stub.WatchStock(t.stock_pb2.WatchStockRequest(), metadata=t.metadata(token))
    first = True
    async for message in call:
        if first:
            first = False
            ready.release()
        now = time.perf_counter()
        for item in message.items:
            arrivals.setdefault((org_id, item.qty), []).append(now)


async def measure(server, orgs):
    from walklist.v1 import inventory_pb2, inventory_pb2_grpc  # noqa: E402
    channels = [grpc.aio.insecure_channel(server.target) for _ in range(CHANNELS)]
    stubs = [t.stock_pb2_grpc.StockServiceStub(c) for c in channels]
    writer = inventory_pb2_grpc.InventoryServiceStub(channels[0])
    arrivals = {}
    ready = asyncio.Semaphore(0)
    pid = server.process.pid
    before = rss_kib(pid)
    tasks = [asyncio.create_task(watch(stubs[i % CHANNELS], orgs[i % len(orgs)][1],
                                       orgs[i % len(orgs)][0], ready, arrivals))
             for i in range(STREAMS)]
    started = time.perf_counter()
    for _ in range(STREAMS):
        await asyncio.wait_for(ready.acquire(), t.PATIENCE_S)
    opened_s = time.perf_counter() - started
    await asyncio.sleep(1)  # what the first messages left behind settles
    after = rss_kib(pid)
    per_org = STREAMS // len(orgs)
    firsts, lasts = [], []
    for change in range(CHANGES):
        org_id, _, write_key = orgs[change % len(orgs)]
        qty = 1000 + change
        await writer.SetStock(inventory_pb2.SetStockRequest(items=[inventory_pb2.StockLevel(
            sku="SKU-1", warehouse="W1", on_hand=qty)]), metadata=t.metadata(write_key))
        committed = time.perf_counter()
        deadline = committed + t.PATIENCE_S
        while len(arrivals.get((org_id, qty), [])) < per_org:
            if time.perf_counter() > deadline:
                raise AssertionError(f"change {change}: {len(arrivals.get((org_id, qty), []))}"
                                     f" of {per_org} watchers got it")
            await asyncio.sleep(0.001)
        times = arrivals[(org_id, qty)]
        firsts.append((min(times) - committed) * 1e3)
        lasts.append((max(times) - committed) * 1e3)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for channel in channels:
        await channel.close()
    growth = after - before
    print(f"| WatchStock over gRPC, {STREAMS} idle streams on {len(orgs)} organizations "
          f"({per_org} each), specified limits | opened in {opened_s:.1f} s; walklistd RSS "
          f"+{growth / 1024:.1f} MiB, {growth * 1024 / STREAMS:,.0f} bytes per stream | "
          f"{CHANGES} stock changes, one at a time: commit to first watcher p50 "
          f"{percentile(firsts, 0.5):.1f} ms, p99 {percentile(firsts, 0.99):.1f} ms; to the "
          f"last of the organization's {per_org} p50 {percentile(lasts, 0.5):.1f} ms, p99 "
          f"{percentile(lasts, 0.99):.1f} ms |", flush=True)


def main():
    orgs = organizations()
    server = t.Walklistd("--threads", "8", "--db-pool-size", "10")
    try:
        asyncio.run(measure(server, orgs))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
