"""One run of unary CreateLocateList and GetLocateList over gRPC (grpcio) and over Connect
(binary, one kept-alive HTTP/1.1 connection), against one walklistd, one client thread each:
calls per second and latency percentiles. Started by `run.sh WORKDIR bench` (see run.sh).
It measures the transports on this machine, Python client included, not the service's limits
(scripts/bench.sh does that with wrk)."""
import http.client
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_grpc as t  # noqa: E402  (the same harness: walklistd, keys, stubs)

CALLS = int(os.environ.get("WALKLIST_BENCH_CALLS", "2000"))


def measure(label, call):
    latencies = []
    start = time.perf_counter()
    for i in range(CALLS):
        before = time.perf_counter()
        call(i)
        latencies.append(time.perf_counter() - before)
    total = time.perf_counter() - start
    latencies.sort()
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1e3  # noqa: E731
    print(f"| {label} | {CALLS} | {CALLS / total:,.0f} | {p(0.5):.2f} | {p(0.99):.2f} |", flush=True)


def main():
    t.ctl("org", "create", "bench")
    token = t.key("bench", "lists:write")
    server = t.Walklistd("--rate-limit-locate-lists", t.HIGH, "--rate-limit-shared", t.HIGH)
    try:
        channel = server.channel()
        stub = t.locate_list_pb2_grpc.LocateListServiceStub(channel)
        md = t.metadata(token)
        create = t.locate_list_pb2.CreateLocateListRequest(name="bench", codes=[f"SKU-{i}" for i in range(20)])
        list_id = stub.CreateLocateList(create, metadata=md).id
        get = t.locate_list_pb2.GetLocateListRequest(id=list_id)
        conn = http.client.HTTPConnection("127.0.0.1", server.http_port)
        headers = {"Content-Type": "application/proto", "Connect-Protocol-Version": "1",
                   "Authorization": f"Bearer {token}"}

        def connect(path, request):
            body = request.SerializeToString()

            def call(_):
                conn.request("POST", path, body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                assert response.status == 200, response.status
            return call

        print("| transport and method | calls | calls/s | p50 ms | p99 ms |")
        print("|---|---|---|---|---|")
        measure("gRPC GetLocateList", lambda _: stub.GetLocateList(get, metadata=md))
        measure("Connect GetLocateList", connect("/walklist.v1.LocateListService/GetLocateList", get))
        measure("gRPC CreateLocateList", lambda _: stub.CreateLocateList(create, metadata=md))
        measure("Connect CreateLocateList",
                connect("/walklist.v1.LocateListService/CreateLocateList", create))
        conn.close()
        channel.close()
    finally:
        assert server.stop() == 0


if __name__ == "__main__":
    main()
