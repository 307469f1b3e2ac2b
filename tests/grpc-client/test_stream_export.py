"""StreamExportStock and WatchStock's catch-up over gRPC (grpcio) and Connect, on a catalogue
larger than a unary message may carry (WALKLIST_STREAM_SKUS, default 200,000 SKUs, made with
`walklistctl generate`).

The streamed export must be the REST export of the same snapshot exactly: items, order, cursor,
in messages far below the 4 MiB gRPC clients take, with generatedAt and the cursor on the last
one only; the same with gzip both ways (seen on the wire with curl: every message flagged
compressed); a `since` delta the same as the REST delta; bad input refused with a clear status
and nothing written; the database failing half way through a (Connect) stream ends it with an
error, never a clean end. WatchStock from a cursor about 200,000 changes behind arrives complete,
in bounded messages, each but the last with an empty cursor.
"""
import gzip
import json
import os
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_grpc as t  # noqa: E402  (the harness: walklistd, keys, psql)

import grpc  # noqa: E402
from walklist.v1 import inventory_pb2, inventory_pb2_grpc  # noqa: E402
from walklist.v1 import stock_pb2, stock_pb2_grpc  # noqa: E402

SKUS = int(os.environ.get("WALKLIST_STREAM_SKUS", "200000"))
# A message is cut once it holds 1 MiB (walklistd's WL_RPC_STREAM_MESSAGE): at most one item and
# the closing fields more.
MESSAGE_MAX = 1024 * 1024 + 512
ORG = "grpc-stream"


def item_tuple(item):
    """A StockExportItem as the REST export's JSON shows it."""
    return (item.sku, item.qty, item.location.value if item.HasField("location") else None,
            item.removed if item.WhichOneof("change") else None)


def rest_tuple(item):
    return (item["sku"], item["qty"], item["location"], item.get("removed"))


class StreamExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        t.ctl("org", "create", ORG)
        t.ctl("org", "create", ORG + "-other")
        cls.token = t.key(ORG, "stock:read,inventory:write")
        cls.all = cls.token  # the key of raw_call (the harness's curl calls)
        cls.lists_only = t.key(ORG, "lists:write")
        cls.other = t.key(ORG + "-other", "stock:read")
        cls.server = t.Walklistd("--rate-limit-stock-export", t.HIGH, "--rate-limit-shared", t.HIGH)
        cls.channel = cls.server.channel()
        cls.stock = stock_pb2_grpc.StockServiceStub(cls.channel)
        # The cursor of the empty export: generating the catalogue replaces the whole export,
        # which starts its history again, so this cursor has expired afterwards.
        cls.expired = cls.stock.ExportStock(stock_pb2.ExportStockRequest(), metadata=t.metadata(cls.token)).cursor
        t.ctl("generate", "--org", ORG, "--skus", str(SKUS))
        cls.warehouse = t.sql(f"SELECT w.code FROM warehouses w JOIN organizations o USING (org_id) "
                              f"WHERE o.slug = '{ORG}' AND w.kind = 'own' ORDER BY w.code LIMIT 1")[0][0]

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        assert cls.server.stop() == 0

    def rest(self, since=None, token=None):
        """GET /api/v1/stock-export (with since: the delta) as JSON."""
        query = f"?since={since}" if since else ""
        req = urllib.request.Request(f"http://127.0.0.1:{self.server.http_port}/api/v1/stock-export{query}",
                                     headers={"Authorization": f"Bearer {token or self.token}"})
        with urllib.request.urlopen(req, timeout=t.PATIENCE_S) as r:
            return json.loads(r.read())

    def stream(self, since="", **kwargs):
        call = self.stock.StreamExportStock(stock_pb2.StreamExportStockRequest(since=since),
                                            metadata=t.metadata(self.token), **kwargs)
        messages = list(call)
        self.assertEqual(call.code(), grpc.StatusCode.OK)
        return messages, dict(call.initial_metadata())

    def check_same_as_rest(self, messages, rest):
        self.assertGreater(len(messages), 0)
        for m in messages:
            self.assertLessEqual(m.ByteSize(), MESSAGE_MAX)
        for m in messages[:-1]:
            self.assertEqual(m.cursor, "")
            self.assertFalse(m.HasField("generated_at"))
        last = messages[-1]
        self.assertEqual(last.cursor, rest["cursor"])
        self.assertTrue(last.HasField("generated_at"))
        self.assertEqual([item_tuple(i) for m in messages for i in m.items],
                         [rest_tuple(i) for i in rest["items"]])
        # Concatenated, the binary messages are one ExportStockResponse of the same snapshot.
        whole = stock_pb2.ExportStockResponse.FromString(b"".join(m.SerializeToString() for m in messages))
        self.assertEqual((len(whole.items), whole.cursor), (len(rest["items"]), rest["cursor"]))

    def test_full_export(self):
        rest = self.rest()
        self.assertGreater(len(rest["items"]), SKUS // 2)
        # The unary call cannot carry it (4 MiB); the stream can.
        e = None
        try:
            self.stock.ExportStock(stock_pb2.ExportStockRequest(), metadata=t.metadata(self.token))
        except grpc.RpcError as caught:
            e = caught
        if SKUS >= 200000:
            self.assertIsNotNone(e, "the unary export of this catalogue fits in 4 MiB: raise WALKLIST_STREAM_SKUS")
            self.assertEqual(e.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("StreamExportStock", e.details())
        messages, headers = self.stream()
        self.assertGreater(len(messages), 1)
        self.check_same_as_rest(messages, rest)
        # The export's bucket, counted once for the stream.
        self.assertIn('"stock-export"', headers.get("ratelimit-policy", ""))

    def test_gzip_both_ways(self):
        rest = self.rest()
        # grpcio takes gzip answers by default; the request goes gzip'd too.
        messages, _ = self.stream(compression=grpc.Compression.Gzip)
        self.check_same_as_rest(messages, rest)
        # On the wire: every message of the answer flagged compressed, gzip-coded.
        request = stock_pb2.StreamExportStockRequest().SerializeToString()
        raw = t.GrpcTest.raw_call(self, "/walklist.v1.StockService/StreamExportStock",
                                  b"\0" + len(request).to_bytes(4, "big") + request,
                                  ["grpc-accept-encoding: gzip"])
        if raw is None:
            return
        data, status, coding, log = raw
        self.assertEqual((status, coding), (0, "gzip"), log[-2000:])
        decoded, at = [], 0
        while at < len(data):
            flag, length = data[at], int.from_bytes(data[at + 1:at + 5], "big")
            self.assertEqual(flag, 1)
            decoded.append(stock_pb2.StreamExportStockResponse.FromString(gzip.decompress(data[at + 5:at + 5 + length])))
            at += 5 + length
        # The same snapshot when nothing was written in between: compare items and cursor.
        self.check_same_as_rest(decoded, self.rest())

    def test_delta(self):
        cursor = self.rest()["cursor"]
        inv = inventory_pb2_grpc.InventoryServiceStub(self.channel)
        skus = [i["sku"] for i in self.rest()["items"][1000:1003]]
        inv.SetStock(inventory_pb2.SetStockRequest(items=[
            inventory_pb2.StockLevel(sku=s, warehouse=self.warehouse, on_hand=777000 + n)
            for n, s in enumerate(skus)]), metadata=t.metadata(self.token))
        rest = self.rest(since=cursor)
        self.assertEqual([i["sku"] for i in rest["items"]], skus)
        messages, _ = self.stream(since=cursor)
        self.check_same_as_rest(messages, rest)
        self.assertEqual(len(messages), 1)

    def test_bad_input_writes_nothing(self):
        written = ("SELECT (SELECT count(*) FROM export_changes), (SELECT coalesce(sum(version), 0) FROM "
                   "export_versions), (SELECT count(*) FROM locate_lists), (SELECT count(*) FROM stock)")
        before = t.sql(written)
        md = t.metadata(self.token)
        cursor = self.rest()["cursor"]
        other = self.rest(token=self.other)["cursor"]

        def refused(code, since="", metadata=md):
            call = self.stock.StreamExportStock(stock_pb2.StreamExportStockRequest(since=since), metadata=metadata)
            with self.assertRaises(grpc.RpcError) as caught:
                for _ in call:
                    self.fail("a message came before the error")
            self.assertEqual(caught.exception.code(), code, caught.exception.details())
            self.assertTrue(caught.exception.details())
            return caught.exception

        for since in ("garbage", cursor[:-2] + ("AA" if cursor[-2:] != "AA" else "BB"), other):
            e = refused(grpc.StatusCode.INVALID_ARGUMENT, since)
            self.assertEqual([f for f, _ in t.violations(e)], ["since"])
        e = refused(grpc.StatusCode.OUT_OF_RANGE, self.expired)
        self.assertEqual(t.error_info(e)[0], "CURSOR_EXPIRED")
        e = refused(grpc.StatusCode.PERMISSION_DENIED, metadata=t.metadata(self.lists_only))
        self.assertEqual(t.error_info(e)[0], "SCOPE_MISSING")
        refused(grpc.StatusCode.UNAUTHENTICATED, metadata=())
        refused(grpc.StatusCode.UNAUTHENTICATED, metadata=t.metadata("wlk_AAAAAAAA_" + "B" * 40))
        self.assertEqual(t.sql(written), before)

    def test_database_failing_half_way(self):
        """The database goes away after the first bytes of a Connect stream (JSON: about 10 MB,
        more than walklistd and the sockets hold while the client waits): the stream ends with an
        end-stream message carrying the error, never with a clean end, and the service carries
        on."""
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.server.http_port, timeout=t.PATIENCE_S)
        request = b"{}"
        conn.request("POST", "/walklist.v1.StockService/StreamExportStock",
                     body=b"\0" + len(request).to_bytes(4, "big") + request,
                     headers={"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
                              "Authorization": f"Bearer {self.token}"})
        response = conn.getresponse()
        self.assertEqual(response.status, 200)
        body = response.read(64 * 1024)

        def killed():
            # The stream's connection, in its COPY or idle in its transaction just before it.
            return int(t.sql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                             "WHERE datname = current_database() AND application_name = 'walklist' "
                             "AND (state LIKE 'idle in transaction%' OR (state = 'active' AND query LIKE 'COPY %'))")[0][0])
        t.poll("the stream's database connection", killed)
        body += response.read()
        conn.close()
        envelopes, at = [], 0
        while at < len(body):
            flag, length = body[at], int.from_bytes(body[at + 1:at + 5], "big")
            envelopes.append((flag, body[at + 5:at + 5 + length]))
            at += 5 + length
        self.assertEqual(at, len(body))
        self.assertTrue(all(flag == 0 for flag, _ in envelopes[:-1]))
        flag, end = envelopes[-1]
        self.assertEqual(flag, 2)
        error = json.loads(end)["error"]
        self.assertIn(error["code"], ("unavailable", "internal"))
        self.assertIn("incomplete", error["message"])
        self.assertIn("stock export stream cut off", self.server.text())
        # The service carries on, with a fresh connection.
        messages, _ = self.stream()
        self.check_same_as_rest(messages, self.rest())

    def test_watch_catch_up_in_bounded_messages(self):
        rest = self.rest()
        cursor = rest["cursor"]
        skus = [i["sku"] for i in rest["items"]]
        # Two writes, each changing a little under half of the export (a write changing more
        # would replace the export and start its history again).
        half = len(skus) // 2 - 1
        for part, chunk in enumerate((skus[:half], skus[half:2 * half])):
            path = os.path.join(t.RUN_DIR, f"catch-up-{part}.csv")
            with open(path, "w") as f:
                f.write("sku,warehouse,on_hand\n")
                f.writelines(f"{s},{self.warehouse},{900000 + part}\n" for s in chunk)
            t.ctl("import", "stock", path, "--org", ORG)
        delta = self.rest(since=cursor)
        self.assertEqual(len(delta["items"]), 2 * half)
        call = self.stock.WatchStock(stock_pb2.WatchStockRequest(since=cursor), metadata=t.metadata(self.token))
        messages = []
        for message in call:
            self.assertLessEqual(message.ByteSize(), MESSAGE_MAX)
            messages.append(message)
            if message.cursor:
                break
        call.cancel()
        self.assertGreater(sum(m.ByteSize() for m in messages), 4 * 1024 * 1024)
        self.assertTrue(all(m.cursor == "" for m in messages[:-1]))
        self.assertEqual(messages[-1].cursor, delta["cursor"])
        self.assertEqual([item_tuple(i) for m in messages for i in m.items],
                         [rest_tuple(i) for i in delta["items"]])


if __name__ == "__main__":
    unittest.main()
