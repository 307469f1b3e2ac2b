"""walklistd's gRPC transport driven by Debian's grpcio (python3-grpcio), a client nobody here wrote.

Every method of every core service is called with stubs generated from proto/ (run.sh), then
every error class, deadlines, cancellation, message limits, gzip both ways, health, TLS with ALPN h2 and a
graceful shutdown. Errors are compared with what the Connect transport answers for the same
request (same code, message and field violations), and a refused request is checked to have
changed nothing in the database.

Nothing here waits on a clock: a call is held at the database by a row lock this test holds,
and the test polls what it waits for (pg_locks, /metrics, the log) without a margin to meet.
"""
import base64
import concurrent.futures
import gzip
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.environ["WALKLIST_GEN_DIR"])

import grpc  # noqa: E402
from google.rpc import error_details_pb2, status_pb2  # noqa: E402
from walklist.v1 import inventory_pb2, inventory_pb2_grpc  # noqa: E402
from walklist.v1 import locate_list_pb2, locate_list_pb2_grpc  # noqa: E402
from walklist.v1 import scanner_pb2, scanner_pb2_grpc  # noqa: E402
from walklist.v1 import stock_pb2, stock_pb2_grpc  # noqa: E402

_spec = importlib.util.spec_from_file_location("health_pb2", os.environ["WALKLIST_HEALTH_PB2"])
health_pb2 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(health_pb2)

WALKLISTD = os.environ["WALKLISTD"]
WALKLISTCTL = os.environ["WALKLISTCTL"]
CONNINFO = os.environ["WALKLIST_DB_CONNINFO"]
PSQL = os.environ["PSQL"]
RUN_DIR = os.environ["WALKLIST_RUN_DIR"]
ISSUED_TOKENS = os.path.join(os.path.dirname(os.path.dirname(RUN_DIR)), "tests", "issued-tokens.txt")
# Long enough never to end a wait this test means to end itself.
PATIENCE_S = 60
HIGH = "1000000"


def ctl(*args):
    return subprocess.run([WALKLISTCTL, "--database-url", CONNINFO, *args], check=True,
                          capture_output=True, text=True).stdout.strip()


def sql(query):
    """One statement's rows, as lists of text fields."""
    out = subprocess.run([PSQL, "-X", "-q", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-d", CONNINFO,
                          "-c", query], check=True, capture_output=True, text=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


def key(org, scopes, name="k"):
    token = ctl("key", "create", "--org", org, "--scopes", scopes, "--name", name)
    # e2e.zz_no_keys_in_logs looks for every issued key in the logs.
    try:
        os.makedirs(os.path.dirname(ISSUED_TOKENS), exist_ok=True)
        with open(ISSUED_TOKENS, "a") as f:
            f.write(token + "\n")
    except OSError:
        pass
    return token


def poll(what, check, patience_s=PATIENCE_S):
    deadline = time.monotonic() + patience_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {patience_s} s for {what}")
        time.sleep(0.05)


def watched_organization(slug, skus, *options):
    """For WatchStock: organization slug with warehouse W (own) and products skus, and a
    walklistd (options; the stock-export and shared buckets raised) with a key for stock and
    inventory: (walklistd, channel, StockService stub, InventoryService stub, call metadata)."""
    ctl("org", "create", slug)
    md = metadata(key(slug, "stock:read,inventory:write"))
    server = Walklistd(*options, "--rate-limit-stock-export", HIGH, "--rate-limit-shared", HIGH)
    try:
        channel = server.channel()
        stock = stock_pb2_grpc.StockServiceStub(channel)
        inv = inventory_pb2_grpc.InventoryServiceStub(channel)
        inv.UpsertWarehouses(inventory_pb2.UpsertWarehousesRequest(warehouses=[
            inventory_pb2.Warehouse(code="W", name="Main", kind="own")]), metadata=md)
        inv.UpsertProducts(inventory_pb2.UpsertProductsRequest(products=[
            inventory_pb2.Product(sku=sku, name=sku) for sku in skus]), metadata=md)
    except BaseException:
        server.stop()
        raise
    return server, channel, stock, inv, md


class Walklistd:
    """A walklistd on free ports (HTTP and gRPC), read back from its "listening" log line."""

    def __init__(self, *extra, conninfo=CONNINFO):
        self.log_path = tempfile.mktemp(prefix="walklistd-", suffix=".log", dir=RUN_DIR)
        self.log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [WALKLISTD, "--database-url", conninfo, "--listen", "127.0.0.1:0", "--grpc-listen",
             "127.0.0.1:0", "--threads", "2", "--rate-limit-anonymous", HIGH, *extra],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)

        def listening():
            if self.process.poll() is not None:
                raise AssertionError("walklistd exited at start:\n" + self.text())
            m = re.search(r'"msg":"listening".*?"port":(\d+).*?"grpcPort":(\d+)', self.text())
            return m and (int(m.group(1)), int(m.group(2)))

        self.http_port, self.grpc_port = poll("walklistd's ports", listening)
        self.target = f"127.0.0.1:{self.grpc_port}"

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def channel(self):
        return grpc.insecure_channel(self.target)

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/metrics") as r:
            return r.read().decode()

    def metric(self, name, labels=""):
        m = re.search(r"^" + re.escape(name + labels) + r" (\d+)$", self.metrics(), re.M)
        return int(m.group(1)) if m else 0

    def connect(self, path, request, token, headers=None):
        """The same request over the Connect transport (binary): (status, body as dict or bytes)."""
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.http_port}{path}", data=request.SerializeToString(),
            headers={"Content-Type": "application/proto", "Connect-Protocol-Version": "1",
                     "Authorization": f"Bearer {token}", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=PATIENCE_S) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(PATIENCE_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        text = self.text()
        bad = [line for line in text.splitlines() if not line.startswith("{")]
        if bad or re.search(r"ERROR: (Address|Leak)Sanitizer|runtime error:", text):
            raise AssertionError("walklistd wrote a line that is not JSON or a sanitizer "
                                 "report:\n" + "\n".join(bad[:20] or text.splitlines()[-40:]))
        return self.process.returncode


class DatabaseLink:
    """The tests' PostgreSQL behind a TCP port of its own, which can be cut (every connection
    closed, new ones refused) and restored: an outage for one walklistd, the others unharmed."""

    def __init__(self):
        host = re.search(r"host=(\S+)", CONNINFO).group(1).strip("'")
        port = re.search(r"port=(\d+)", CONNINFO).group(1)
        self.socket_path = os.path.join(host, f".s.PGSQL.{port}")
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.conninfo = re.sub(r"port=\d+", f"port={self.listener.getsockname()[1]}",
                               re.sub(r"host=\S+", "host=127.0.0.1", CONNINFO))
        self.lock = threading.Lock()
        self.open = True
        self.sockets = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if not self.open:
                    client.close()
                    continue
                server = socket.socket(socket.AF_UNIX)
                server.connect(self.socket_path)
                self.sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self.pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def pump(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        try:
            sink.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        source.close()  # each socket is the source of one pump

    def cut(self):
        with self.lock:
            self.open = False
            for s in self.sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.sockets = []

    def restore(self):
        with self.lock:
            self.open = True

    def close(self):
        self.cut()
        self.listener.close()


def metadata(token):
    return (("authorization", f"Bearer {token}"),)


BAD_REQUEST_URL = "type.googleapis.com/google.rpc.BadRequest"
ERROR_INFO_URL = "type.googleapis.com/google.rpc.ErrorInfo"


def status_details(error):
    """The google.rpc.Status details of a gRPC error (grpc-status-details-bin): every one carries
    an ErrorInfo as its last detail, after the BadRequest of invalid input."""
    for k, v in error.trailing_metadata() or ():
        if k == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(v)
            assert status.code == error.code().value[0], (status.code, error.code())
            assert status.message == error.details(), (status.message, error.details())
            urls = [d.type_url for d in status.details]
            assert urls in ([ERROR_INFO_URL], [BAD_REQUEST_URL, ERROR_INFO_URL]), urls
            return status.details
    raise AssertionError(f"no grpc-status-details-bin in {error}")


def violations(error):
    """The field violations of a gRPC error."""
    out = []
    for detail in status_details(error):
        if detail.type_url == BAD_REQUEST_URL:
            bad = error_details_pb2.BadRequest.FromString(detail.value)
            out += [(fv.field, fv.description) for fv in bad.field_violations]
    return out


def error_info(error):
    """The ErrorInfo of a gRPC error: (reason, metadata as a dict), in walklist's domain."""
    info = error_details_pb2.ErrorInfo.FromString(status_details(error)[-1].value)
    assert info.domain == "walklist.dev", info.domain
    return info.reason, dict(info.metadata)


def connect_detail(detail):
    value = detail["value"]
    return base64.b64decode(value + "=" * (-len(value) % 4))


def connect_violations(body):
    out = []
    for detail in body.get("details", []):
        if detail["type"] == "google.rpc.BadRequest":
            bad = error_details_pb2.BadRequest.FromString(connect_detail(detail))
            out += [(fv.field, fv.description) for fv in bad.field_violations]
    return out


def connect_error_info(body):
    """The ErrorInfo of a Connect error body (its last detail): (reason, metadata as a dict)."""
    detail = body["details"][-1]
    assert detail["type"] == "google.rpc.ErrorInfo", body
    info = error_details_pb2.ErrorInfo.FromString(connect_detail(detail))
    assert info.domain == "walklist.dev", info.domain
    return info.reason, dict(info.metadata)


GRPC_TO_CONNECT = {c: c.name.lower() for c in grpc.StatusCode}
GRPC_TO_CONNECT[grpc.StatusCode.CANCELLED] = "canceled"


class RowLock:
    """Holds a row lock of locate_lists in a transaction of its own until released."""

    def __init__(self, list_id):
        self.psql = subprocess.Popen([PSQL, "-X", "-q", "-At", "-d", CONNINFO], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.psql.stdin.write(f"BEGIN;\nSELECT 'locked' FROM locate_lists WHERE id = '{list_id}' FOR UPDATE;\n")
        self.psql.stdin.flush()
        assert self.psql.stdout.readline().strip() == "locked"

    def release(self):
        self.psql.stdin.write("COMMIT;\n\\q\n")
        self.psql.stdin.flush()
        self.psql.wait(PATIENCE_S)


def waiting_on_lock():
    return sql("SELECT count(*) FROM pg_locks WHERE NOT granted")[0][0] != "0"


class GrpcTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ctl("org", "create", "grpc-a")
        ctl("org", "create", "grpc-b")
        ctl("org", "create", "grpc-inv")
        ctl("org", "create", "grpc-limited")
        cls.all = key("grpc-a", "lists:write,stock:read,scanner,inventory:write")
        cls.lists = key("grpc-a", "lists:write")
        cls.other = key("grpc-b", "lists:write,stock:read,scanner,inventory:write")
        cls.inv = key("grpc-inv", "lists:write,stock:read,scanner,inventory:write")
        cls.limited = key("grpc-limited", "lists:write,stock:read,scanner,inventory:write")
        revoked = key("grpc-a", "lists:write", "revoked")
        ctl("key", "revoke", revoked.split("_")[1])
        cls.revoked = revoked
        cls.server = Walklistd("--rate-limit-locate-lists", HIGH, "--rate-limit-stock-export", HIGH,
                               "--rate-limit-shared", HIGH, "--grpc-threads", "2")
        cls.channel = cls.server.channel()
        cls.lists_stub = locate_list_pb2_grpc.LocateListServiceStub(cls.channel)
        cls.stock_stub = stock_pb2_grpc.StockServiceStub(cls.channel)
        cls.scanner_stub = scanner_pb2_grpc.ScannerServiceStub(cls.channel)
        cls.inventory_stub = inventory_pb2_grpc.InventoryServiceStub(cls.channel)
        # grpc-a's inventory, written through InventoryService itself.
        inv = cls.inventory_stub
        md = metadata(cls.all)
        inv.UpsertWarehouses(inventory_pb2.UpsertWarehousesRequest(warehouses=[
            inventory_pb2.Warehouse(code="WH1", name="Main", kind="own"),
            inventory_pb2.Warehouse(code="SUP", name="Supplier", kind="supplier")]), metadata=md)
        inv.UpsertLocations(inventory_pb2.UpsertLocationsRequest(locations=[
            inventory_pb2.Location(warehouse="WH1", code="A-10"),
            inventory_pb2.Location(warehouse="WH1", code="A-2"),
            inventory_pb2.Location(warehouse="WH1", code="STAGE", staging=True)]), metadata=md)
        inv.UpsertProducts(inventory_pb2.UpsertProductsRequest(products=[
            inventory_pb2.Product(sku="SKU-1001", name="Widget", eans=["4006381333931"]),
            inventory_pb2.Product(sku="SKU-1002", name="Gadget", eans=["4000000000001"]),
            inventory_pb2.Product(sku="SKU-2000", name="Gizmo", eans=["4000000000001"])]), metadata=md)
        inv.SetStock(inventory_pb2.SetStockRequest(items=[
            inventory_pb2.StockLevel(sku="SKU-1001", warehouse="WH1", on_hand=10),
            inventory_pb2.StockLevel(sku="SKU-2000", warehouse="WH1", on_hand=3)]), metadata=md)
        inv.SetLocationStock(inventory_pb2.SetLocationStockRequest(items=[
            inventory_pb2.LocationStockLevel(sku="SKU-1001", warehouse="WH1", location="A-10", quantity=4),
            inventory_pb2.LocationStockLevel(sku="SKU-1001", warehouse="WH1", location="A-2", quantity=6)]),
            metadata=md)
        inv.CreateReservations(inventory_pb2.CreateReservationsRequest(reservations=[
            inventory_pb2.Reservation(ref="R-1", sku="SKU-1001", warehouse="WH1", quantity=3)]), metadata=md)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        assert cls.server.stop() == 0

    def create_list(self, name, codes, token=None):
        return self.lists_stub.CreateLocateList(
            locate_list_pb2.CreateLocateListRequest(name=name, codes=codes),
            metadata=metadata(token or self.all))

    def assert_error(self, code, call, *args, **kwargs):
        with self.assertRaises(grpc.RpcError, msg=f"{call} {str(args)[:300]}") as caught:
            call(*args, **kwargs)
        self.assertEqual(caught.exception.code(), code, caught.exception.details())
        return caught.exception

    # --- Every method ---------------------------------------------------------------------

    def test_locate_lists(self):
        created = self.create_list("Aisle 3", [" SKU-1001 ", "4006381333931", "SKU-1001", "NOPE-1"])
        self.assertEqual((created.name, created.codes_count), ("Aisle 3", 3))
        got = self.lists_stub.GetLocateList(locate_list_pb2.GetLocateListRequest(id=created.id),
                                            metadata=metadata(self.lists))
        self.assertEqual(list(got.codes), ["SKU-1001", "4006381333931", "NOPE-1"])
        self.assertEqual(got.state, "pending")
        self.assertEqual(sql(f"SELECT name, state FROM locate_lists WHERE id = '{created.id}'"),
                         [["Aisle 3", "pending"]])

    def test_stock(self):
        export = self.stock_stub.ExportStock(stock_pb2.ExportStockRequest(), metadata=metadata(self.all))
        self.assertEqual([(i.sku, i.qty, i.location.value if i.HasField("location") else None)
                          for i in export.items],
                         [("SKU-1001", 7, "A-2"), ("SKU-2000", 3, None)])
        self.assertGreater(export.generated_at.seconds, 0)
        page = self.stock_stub.ListStock(stock_pb2.ListStockRequest(page_size=1), metadata=metadata(self.all))
        self.assertEqual((page.items[0].sku, page.items[0].on_hand, page.items[0].reserved), ("SKU-1001", 10, 3))
        self.assertNotEqual(page.next_page_token, "")
        rest = self.stock_stub.ListStock(stock_pb2.ListStockRequest(page_size=10, page_token=page.next_page_token),
                                         metadata=metadata(self.all))
        self.assertEqual([i.sku for i in rest.items], ["SKU-2000"])
        self.assertEqual(rest.next_page_token, "")

    def test_scanner(self):
        created = self.create_list("Scan me", ["4000000000001", "SKU-1001", "NOPE"])
        pending = self.scanner_stub.ListPendingLists(scanner_pb2.ListPendingListsRequest(page_size=200),
                                                     metadata=metadata(self.all))
        self.assertIn(created.id, [p.id for p in pending.lists])
        loaded = self.scanner_stub.LoadLocateList(scanner_pb2.LoadLocateListRequest(id=created.id),
                                                  metadata=metadata(self.all))
        self.assertEqual([(s.bin_code, s.sku) for s in loaded.stops], [("A-2", "SKU-1001"), ("A-10", "SKU-1001")])
        self.assertEqual([(c.code, c.outcome) for c in loaded.codes],
                         [("4000000000001", scanner_pb2.CODE_OUTCOME_AMBIGUOUS),
                          ("SKU-1001", scanner_pb2.CODE_OUTCOME_SKU),
                          ("NOPE", scanner_pb2.CODE_OUTCOME_NOT_FOUND)])
        # A second load: FAILED_PRECONDITION, as on Connect.
        e = self.assert_error(grpc.StatusCode.FAILED_PRECONDITION, self.scanner_stub.LoadLocateList,
                              scanner_pb2.LoadLocateListRequest(id=created.id), metadata=metadata(self.all))
        status, body = self.server.connect("/walklist.v1.ScannerService/LoadLocateList",
                                           scanner_pb2.LoadLocateListRequest(id=created.id), self.all)
        self.assertEqual((body["code"], body["message"]), ("failed_precondition", e.details()))
        self.assertEqual(error_info(e), ("FAILED_PRECONDITION", {}))
        self.assertEqual(connect_error_info(body), error_info(e))

    def test_inventory(self):
        md = metadata(self.inv)
        inv = self.inventory_stub
        self.assertEqual(inv.UpsertWarehouses(inventory_pb2.UpsertWarehousesRequest(warehouses=[
            inventory_pb2.Warehouse(code="W", name="W", kind="own")]), metadata=md).count, 1)
        self.assertEqual(inv.UpsertLocations(inventory_pb2.UpsertLocationsRequest(locations=[
            inventory_pb2.Location(warehouse="W", code="B-1")]), metadata=md).count, 1)
        # A large batch: 1,000 products in one call.
        products = [inventory_pb2.Product(sku=f"P-{i:04d}", name="n" * 200, eans=[f"{i:013d}"]) for i in range(1000)]
        self.assertEqual(inv.UpsertProducts(inventory_pb2.UpsertProductsRequest(products=products),
                                            metadata=md).count, 1000)
        self.assertEqual(inv.SetStock(inventory_pb2.SetStockRequest(items=[
            inventory_pb2.StockLevel(sku="P-0001", warehouse="W", on_hand=9)]), metadata=md).count, 1)
        self.assertEqual(inv.SetLocationStock(inventory_pb2.SetLocationStockRequest(items=[
            inventory_pb2.LocationStockLevel(sku="P-0001", warehouse="W", location="B-1", quantity=9)]),
            metadata=md).count, 1)
        self.assertEqual(inv.CreateReservations(inventory_pb2.CreateReservationsRequest(reservations=[
            inventory_pb2.Reservation(ref="X-1", sku="P-0001", warehouse="W", quantity=2),
            inventory_pb2.Reservation(ref="X-2", sku="P-0001", warehouse="W", quantity=1)]), metadata=md).count, 2)
        self.assertEqual(inv.ReleaseReservations(inventory_pb2.ReleaseReservationsRequest(refs=["X-1"]),
                                                 metadata=md).count, 1)
        self.assertEqual(inv.ConsumeReservations(inventory_pb2.ConsumeReservationsRequest(refs=["X-2"]),
                                                 metadata=md).count, 1)
        export = self.stock_stub.ExportStock(stock_pb2.ExportStockRequest(), metadata=md)
        self.assertEqual([(i.sku, i.qty, i.location.value) for i in export.items], [("P-0001", 9, "B-1")])
        # Errors of the reservations: ALREADY_EXISTS, NOT_FOUND, FAILED_PRECONDITION.
        e = self.assert_error(grpc.StatusCode.ALREADY_EXISTS, inv.CreateReservations,
                              inventory_pb2.CreateReservationsRequest(reservations=[
                                  inventory_pb2.Reservation(ref="X-2", sku="P-0001", warehouse="W",
                                                            quantity=5)]), metadata=md)
        self.assertEqual(error_info(e)[0], "ALREADY_EXISTS")
        e = self.assert_error(grpc.StatusCode.NOT_FOUND, inv.ReleaseReservations,
                              inventory_pb2.ReleaseReservationsRequest(refs=["NOPE"]), metadata=md)
        self.assertEqual(error_info(e)[0], "NOT_FOUND")
        e = self.assert_error(grpc.StatusCode.FAILED_PRECONDITION, inv.ConsumeReservations,
                              inventory_pb2.ConsumeReservationsRequest(refs=["X-1"]), metadata=md)
        self.assertEqual(error_info(e)[0], "FAILED_PRECONDITION")

    def test_concurrent_calls_on_one_connection(self):
        futures = [self.lists_stub.CreateLocateList.future(
            locate_list_pb2.CreateLocateListRequest(name=f"Concurrent {i}", codes=[f"C-{i}"]),
            metadata=metadata(self.all)) for i in range(24)]
        ids = [f.result(PATIENCE_S).id for f in futures]
        self.assertEqual(len(set(ids)), 24)
        self.assertEqual(sql("SELECT count(*) FROM locate_lists WHERE name LIKE 'Concurrent %'"), [["24"]])

    # --- Errors -------------------------------------------------------------------------------

    def test_unauthenticated(self):
        request = locate_list_pb2.CreateLocateListRequest(name="No key", codes=["A"])
        for md, message, reason in (
                (None, "missing API key", "API_KEY_MISSING"),
                ((("authorization", "Basic abc"),), "the Authorization header must be 'Bearer <API key>'",
                 "API_KEY_MISSING"),
                ((("authorization", "Bearer a b"),), "the Authorization header must be 'Bearer <API key>'",
                 "API_KEY_INVALID"),
                (metadata(self.revoked), "invalid API key", "API_KEY_INVALID"),
                (metadata("wlk_nothing0_" + "x" * 40), "invalid API key", "API_KEY_INVALID")):
            e = self.assert_error(grpc.StatusCode.UNAUTHENTICATED, self.lists_stub.CreateLocateList, request,
                                  metadata=md)
            self.assertEqual(e.details(), message)
            self.assertIn("www-authenticate", dict(e.initial_metadata()))
            self.assertEqual(error_info(e), (reason, {}))
        self.assertEqual(sql("SELECT count(*) FROM locate_lists WHERE name = 'No key'"), [["0"]])

    def test_permission_denied_and_tenancy(self):
        e = self.assert_error(grpc.StatusCode.PERMISSION_DENIED, self.stock_stub.ExportStock,
                              stock_pb2.ExportStockRequest(), metadata=metadata(self.lists))
        status, body = self.server.connect("/walklist.v1.StockService/ExportStock", stock_pb2.ExportStockRequest(),
                                           self.lists)
        self.assertEqual((status, body["code"], body["message"]), (403, "permission_denied", e.details()))
        self.assertEqual(error_info(e), ("SCOPE_MISSING", {"scope": "stock:read"}))
        self.assertEqual(connect_error_info(body), error_info(e))
        created = self.create_list("Mine", ["A"])
        for call, request in ((self.lists_stub.GetLocateList, locate_list_pb2.GetLocateListRequest(id=created.id)),
                              (self.scanner_stub.LoadLocateList, scanner_pb2.LoadLocateListRequest(id=created.id))):
            self.assert_error(grpc.StatusCode.NOT_FOUND, call, request, metadata=metadata(self.other))
        self.assertEqual(sql(f"SELECT state FROM locate_lists WHERE id = '{created.id}'"), [["pending"]])
        other_export = self.stock_stub.ExportStock(stock_pb2.ExportStockRequest(), metadata=metadata(self.other))
        self.assertEqual(list(other_export.items), [])

    def test_unknown_method(self):
        call = self.channel.unary_unary("/walklist.v1.StockService/NoSuchMethod")
        e = self.assert_error(grpc.StatusCode.UNIMPLEMENTED, call, b"", metadata=metadata(self.all))
        self.assertEqual(e.details(), "no such method")
        self.assertEqual(error_info(e), ("ENDPOINT_NOT_FOUND", {}))

    def test_watch_stock(self):
        """WatchStock as a gRPC server stream, on a walklistd of one gRPC worker: idle streams hold
        none (a write is still answered at once), each write arrives once with the cursor of the
        export after it, an idle stream gets heartbeats, SIGTERM ends every stream UNAVAILABLE."""
        server, channel, stock, inv, md = watched_organization(
            "grpc-watch", ["P1", "P2"], "--grpc-threads", "1", "--watch-heartbeat-s", "1")
        try:
            inv.SetStock(inventory_pb2.SetStockRequest(items=[
                inventory_pb2.StockLevel(sku="P1", warehouse="W", on_hand=5)]), metadata=md)
            export = stock.ExportStock(stock_pb2.ExportStockRequest(), metadata=md)
            streams = [stock.WatchStock(stock_pb2.WatchStockRequest(since=export.cursor), metadata=md)
                       for _ in range(3)]
            for stream in streams:
                first = next(stream)
                self.assertEqual((list(first.items), first.cursor), ([], export.cursor))
            started = time.monotonic()
            inv.SetStock(inventory_pb2.SetStockRequest(items=[
                inventory_pb2.StockLevel(sku="P2", warehouse="W", on_hand=7)]), metadata=md)
            self.assertLess(time.monotonic() - started, 1.0)
            after = stock.ExportStock(stock_pb2.ExportStockRequest(), metadata=md)
            for stream in streams:
                message = next(stream)
                while not message.items:  # a heartbeat first
                    message = next(stream)
                self.assertEqual([(i.sku, i.qty) for i in message.items], [("P2", 7)])
                self.assertEqual(message.cursor, after.cursor)
            beat = next(streams[0])
            self.assertEqual((list(beat.items), beat.cursor), ([], after.cursor))
            server.process.send_signal(signal.SIGTERM)
            for stream in streams:
                with self.assertRaises(grpc.RpcError) as caught:
                    for _ in stream:
                        pass
                self.assertEqual(caught.exception.code(), grpc.StatusCode.UNAVAILABLE)
                self.assertIn("resume from the last cursor", caught.exception.details())
                self.assertEqual(error_info(caught.exception)[0], "SHUTTING_DOWN")
            channel.close()
        finally:
            self.assertEqual(server.stop(), 0)

    def test_watch_shares_deltas(self):
        """Watchers of one organization woken by the same change read its delta once: the others
        take the items one of them read (walklist_watch_deltas_total), and every one gets the
        change and the same cursor as the export after it."""
        server, channel, stock, inv, md = watched_organization(
            "grpc-watch-share", ["S1"], "--watch-heartbeat-s", "3600")
        try:
            export = stock.ExportStock(stock_pb2.ExportStockRequest(), metadata=md)
            streams = [stock.WatchStock(stock_pb2.WatchStockRequest(since=export.cursor), metadata=md)
                       for _ in range(8)]
            for stream in streams:
                first = next(stream)
                self.assertEqual((list(first.items), first.cursor), ([], export.cursor))
            read = server.metric("walklist_watch_deltas_total", '{source="database"}')
            shared = server.metric("walklist_watch_deltas_total", '{source="shared"}')
            inv.SetStock(inventory_pb2.SetStockRequest(items=[
                inventory_pb2.StockLevel(sku="S1", warehouse="W", on_hand=3)]), metadata=md)
            after = stock.ExportStock(stock_pb2.ExportStockRequest(), metadata=md)
            for stream in streams:
                message = next(stream)
                self.assertEqual([(i.sku, i.qty) for i in message.items], [("S1", 3)])
                self.assertEqual(message.cursor, after.cursor)
            # One change may be heard twice (this process's own write, then PostgreSQL's
            # announcement): at most one read per hearing from the first cursor, one more from
            # the next; the other watchers take what was read.
            self.assertLessEqual(
                server.metric("walklist_watch_deltas_total", '{source="database"}') - read, 3)
            self.assertGreaterEqual(
                server.metric("walklist_watch_deltas_total", '{source="shared"}') - shared, 5)
            for stream in streams:
                stream.cancel()
            channel.close()
        finally:
            self.assertEqual(server.stop(), 0)

    def check_invalid(self, path, call, request, counted_sql):
        """An invalid request: INVALID_ARGUMENT with the same message and field violations as
        on Connect, and nothing written."""
        before = sql(counted_sql)
        e = self.assert_error(grpc.StatusCode.INVALID_ARGUMENT, call, request, metadata=metadata(self.inv))
        status, body = self.server.connect(path, request, self.inv)
        self.assertEqual(status, 400)
        self.assertEqual((body["code"], body["message"]), ("invalid_argument", e.details()))
        self.assertEqual(violations(e), connect_violations(body))
        self.assertEqual(error_info(e), ("INVALID_REQUEST", {}))
        self.assertEqual(connect_error_info(body), error_info(e))
        self.assertEqual(sql(counted_sql), before)
        return violations(e)

    def test_validation(self):
        lists_sql = "SELECT count(*), coalesce(max(created_at)::text, '') FROM locate_lists"
        L = locate_list_pb2.CreateLocateListRequest
        create = "/walklist.v1.LocateListService/CreateLocateList"
        cases = [
            (L(name="", codes=["A"]), "name"),
            (L(name="   ", codes=["A"]), "name"),
            (L(name="x" * 121, codes=["A"]), "name"),
            (L(name="bad\x07name", codes=["A"]), "name"),
            (L(name="ok", codes=[]), "codes"),
            (L(name="ok", codes=[f"C{i}" for i in range(201)]), "codes"),
            (L(name="ok", codes=["A", "x" * 65]), "codes[1]"),
            (L(name="ok", codes=["A", "   "]), "codes[1]"),
            (L(name="ok", codes=["bad\x01code"]), "codes[0]"),
        ]
        for request, field in cases:
            found = self.check_invalid(create, self.lists_stub.CreateLocateList, request, lists_sql)
            self.assertIn(field, [f for f, _ in found], (request, found))
        # Bytes protobuf-c would mangle: invalid UTF-8 in a string field.
        raw = self.channel.unary_unary(create)
        e = self.assert_error(grpc.StatusCode.INVALID_ARGUMENT, raw, b"\x0a\x02\xff\xfe\x12\x01A",
                              metadata=metadata(self.inv))
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT)
        stock = "/walklist.v1.StockService/ListStock"
        self.check_invalid(stock, self.stock_stub.ListStock, stock_pb2.ListStockRequest(page_size=1001), lists_sql)
        self.check_invalid(stock, self.stock_stub.ListStock, stock_pb2.ListStockRequest(page_token="forged"),
                           lists_sql)
        self.check_invalid("/walklist.v1.ScannerService/ListPendingLists", self.scanner_stub.ListPendingLists,
                           scanner_pb2.ListPendingListsRequest(page_size=201), lists_sql)
        inv_sql = ("SELECT (SELECT count(*) FROM warehouses), (SELECT count(*) FROM products), "
                   "(SELECT count(*) FROM stock), (SELECT count(*) FROM location_stock), "
                   "(SELECT count(*) FROM reservations), (SELECT count(*) FROM locations)")
        I = inventory_pb2
        inv = self.inventory_stub
        s = "/walklist.v1.InventoryService/"
        for path, call, request in (
            (s + "UpsertWarehouses", inv.UpsertWarehouses, I.UpsertWarehousesRequest()),
            (s + "UpsertWarehouses", inv.UpsertWarehouses,
             I.UpsertWarehousesRequest(warehouses=[I.Warehouse(code="V", name="V", kind="own"),
                                                   I.Warehouse(code="Q", name="Q", kind="moon")])),
            (s + "UpsertWarehouses", inv.UpsertWarehouses,
             I.UpsertWarehousesRequest(warehouses=[I.Warehouse(code="D", name="D", kind="own")] * 2)),
            (s + "UpsertLocations", inv.UpsertLocations,
             I.UpsertLocationsRequest(locations=[I.Location(warehouse="NOWHERE", code="Z")])),
            (s + "UpsertProducts", inv.UpsertProducts,
             I.UpsertProductsRequest(products=[I.Product(sku="", name="x")])),
            (s + "UpsertProducts", inv.UpsertProducts,
             I.UpsertProductsRequest(products=[I.Product(sku=f"Q{i}", name="q") for i in range(1001)])),
            (s + "SetStock", inv.SetStock, I.SetStockRequest(items=[I.StockLevel(sku="P-0001", warehouse="W",
                                                                                 on_hand=-1)])),
            (s + "SetLocationStock", inv.SetLocationStock,
             I.SetLocationStockRequest(items=[I.LocationStockLevel(sku="NOPE", warehouse="W", location="B-1",
                                                                   quantity=1)])),
            (s + "CreateReservations", inv.CreateReservations,
             I.CreateReservationsRequest(reservations=[I.Reservation(ref="Y", sku="P-0001", warehouse="W",
                                                                     quantity=-1)])),
            (s + "ReleaseReservations", inv.ReleaseReservations, I.ReleaseReservationsRequest(refs=[""])),
            (s + "ConsumeReservations", inv.ConsumeReservations, I.ConsumeReservationsRequest()),
        ):
            found = self.check_invalid(path, call, request, inv_sql)
            self.assertTrue(found, (path, request))

    def test_message_too_large(self):
        before = sql("SELECT count(*) FROM locate_lists")
        big = locate_list_pb2.CreateLocateListRequest(name="Big", codes=["x" * 60] * 70000)  # > 4 MiB
        self.assertGreater(big.ByteSize(), 4 * 1024 * 1024)
        e = self.assert_error(grpc.StatusCode.RESOURCE_EXHAUSTED, self.lists_stub.CreateLocateList, big,
                              metadata=metadata(self.all))
        self.assertEqual(sql("SELECT count(*) FROM locate_lists"), before)
        # gRPC's core refuses it before walklistd sees it: the one error without an ErrorInfo
        # (docs/api.md, "Errors"). Connect answers the same case with BODY_TOO_LARGE.
        self.assertNotIn("grpc-status-details-bin", dict(e.trailing_metadata() or ()))

    def raw_call(self, path, frame, headers):
        """A call over HTTP/2 with curl, which shows what grpcio hides: (the bytes of the answer's
        DATA frames, its grpc-status, its grpc-encoding, curl's account of the exchange); None
        without curl."""
        if shutil.which("curl") is None:
            return None
        with tempfile.NamedTemporaryFile(dir=RUN_DIR) as body:
            body.write(frame)
            body.flush()
            args = ["curl", "-sS", "-v", "--http2-prior-knowledge", "--data-binary", f"@{body.name}",
                    "-H", "content-type: application/grpc", "-H", "te: trailers",
                    "-H", f"authorization: Bearer {self.all}"]
            for h in headers:
                args += ["-H", h]
            done = subprocess.run(args + [f"http://{self.server.target}{path}"], capture_output=True,
                                  timeout=PATIENCE_S)
        # Without the key: the account may end up in a failure's message.
        log = re.sub(r"(?im)^> authorization: .*$", "> authorization: (key)", done.stderr.decode(errors="replace"))
        status = re.search(r"^< grpc-status: (\d+)", log, re.M)
        coding = re.search(r"^< grpc-encoding: (\S+)", log, re.M)
        return done.stdout, status and int(status.group(1)), coding and coding.group(1), log

    def test_compression(self):
        """gzip both ways: a gzip'd request, a gzip'd answer (seen on the wire with curl), only
        for a client that takes it and only from 1 KiB on; a message that inflates past the 4 MiB
        limit (a bomb of 1 GiB in 1 MiB too, without walklistd's memory growing), corrupt gzip,
        deflate and an unknown grpc-encoding refused with nothing written."""
        codes = [f"CODE-{i:054d}" for i in range(50)]
        created = self.lists_stub.CreateLocateList(
            locate_list_pb2.CreateLocateListRequest(name="Gzip request", codes=codes),
            metadata=metadata(self.all), compression=grpc.Compression.Gzip)
        self.assertEqual(created.codes_count, 50)
        self.assertEqual(sql("SELECT count(*) FROM locate_lists WHERE name = 'Gzip request'"), [["1"]])
        # grpcio takes gzip and decodes the answer (over 1 KiB: 50 codes of 60 characters).
        got = self.lists_stub.GetLocateList(locate_list_pb2.GetLocateListRequest(id=created.id),
                                            metadata=metadata(self.all))
        self.assertEqual(list(got.codes), codes)
        get = locate_list_pb2.GetLocateListRequest(id=created.id).SerializeToString()
        frame = b"\0" + len(get).to_bytes(4, "big") + get
        path = "/walklist.v1.LocateListService/GetLocateList"
        raw = self.raw_call(path, frame, ["grpc-accept-encoding: gzip"])
        if raw is not None:
            data, status, coding, _ = raw
            self.assertEqual((status, coding), (0, "gzip"))
            self.assertEqual(data[0], 1)  # the compressed flag
            self.assertEqual(locate_list_pb2.LocateList.FromString(gzip.decompress(data[5:])).codes, codes)
            # A client that does not take gzip gets the message uncoded.
            data, status, _, _ = self.raw_call(path, frame, ["grpc-accept-encoding: identity"])
            self.assertEqual((status, data[0]), (0, 0))
            self.assertEqual(locate_list_pb2.LocateList.FromString(data[5:]).codes, codes)
            # A small answer goes uncoded whatever the client takes.
            small = locate_list_pb2.CreateLocateListRequest(name="Small", codes=["A"]).SerializeToString()
            data, status, _, _ = self.raw_call("/walklist.v1.LocateListService/CreateLocateList",
                                            b"\0" + len(small).to_bytes(4, "big") + small,
                                            ["grpc-accept-encoding: gzip"])
            self.assertEqual((status, data[0]), (0, 0))

        before = sql("SELECT count(*) FROM locate_lists")
        # A bomb: 5 MiB of codes gzip'd to a few KiB, past the 4 MiB limit once inflated.
        bomb = locate_list_pb2.CreateLocateListRequest(name="Gzip bomb", codes=["x" * 60] * 80000)
        self.assertGreater(bomb.ByteSize(), 4 * 1024 * 1024)
        e = self.assert_error(grpc.StatusCode.RESOURCE_EXHAUSTED, self.lists_stub.CreateLocateList, bomb,
                              metadata=metadata(self.all), compression=grpc.Compression.Gzip)
        self.assertIn("inflates to more than 4194304 bytes", e.details())
        # Deflate is neither offered nor taken.
        self.assert_error(grpc.StatusCode.UNIMPLEMENTED, self.lists_stub.CreateLocateList,
                          locate_list_pb2.CreateLocateListRequest(name="Deflate", codes=["A"]),
                          metadata=metadata(self.all), compression=grpc.Compression.Deflate)
        if shutil.which("curl") is not None:
            create = "/walklist.v1.LocateListService/CreateLocateList"
            plain = locate_list_pb2.CreateLocateListRequest(name="Gzip corrupt", codes=["A"]).SerializeToString()
            coded = bytearray(gzip.compress(plain))
            coded[-6] ^= 0x55  # the CRC
            _, status, _, log = self.raw_call(create, b"\1" + len(coded).to_bytes(4, "big") + bytes(coded),
                                              ["grpc-encoding: gzip"])
            self.assertEqual(status, grpc.StatusCode.INVALID_ARGUMENT.value[0], log)
            # 1 GiB of zeros in about 1 MiB: refused at 4 MiB inflated, walklistd stays small.
            with open(f"/proc/{self.server.process.pid}/status") as f:
                peak = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
            huge = gzip.compress(bytes(1024 * 1024 * 1024), compresslevel=9)
            _, status, _, log = self.raw_call(create, b"\1" + len(huge).to_bytes(4, "big") + huge,
                                              ["grpc-encoding: gzip"])
            self.assertEqual(status, grpc.StatusCode.RESOURCE_EXHAUSTED.value[0], log)
            with open(f"/proc/{self.server.process.pid}/status") as f:
                grown = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) - peak
            self.assertLess(grown, 64 * 1024, "walklistd's peak memory grew by more than 64 MiB (kB)")
            # An unknown grpc-encoding: gRPC's core of Debian 12 (1.51) drops the header and hands
            # the message on as it came, which does not decode (docs/rpc.md, "gRPC").
            coded = gzip.compress(plain)
            _, status, _, log = self.raw_call(create, b"\1" + len(coded).to_bytes(4, "big") + coded,
                                              ["grpc-encoding: br"])
            self.assertEqual(status, grpc.StatusCode.INVALID_ARGUMENT.value[0], log)
        self.assertEqual(sql("SELECT count(*) FROM locate_lists"), before)

    def test_rate_limit(self):
        limited = Walklistd("--rate-limit-shared", "2", "--rate-limit-locate-lists", HIGH)
        try:
            with limited.channel() as channel:
                stub = stock_pb2_grpc.StockServiceStub(channel)
                request = stock_pb2.ListStockRequest()
                _, call = stub.ListStock.with_call(request, metadata=metadata(self.limited))
                md = dict(call.initial_metadata())
                self.assertEqual((md["ratelimit-limit"], md["ratelimit-remaining"]), ("2", "1"))
                self.assertEqual(md["ratelimit-policy"], '"shared";q=2;w=60')
                stub.ListStock(request, metadata=metadata(self.limited))
                e = self.assert_error(grpc.StatusCode.RESOURCE_EXHAUSTED, stub.ListStock, request,
                                      metadata=metadata(self.limited))
                self.assertEqual(e.details(), "rate limit of 2 requests per 60 s exceeded")
                self.assertIn("retry-after", dict(e.initial_metadata()))
                self.assertEqual(error_info(e), ("RATE_LIMITED", {"bucket": "shared", "limit": "2",
                                                                  "windowSeconds": "60"}))
                status, body = limited.connect("/walklist.v1.StockService/ListStock", request, self.limited)
                self.assertEqual((status, body["code"], body["message"]), (429, "resource_exhausted", e.details()))
                self.assertEqual(connect_error_info(body), error_info(e))
        finally:
            self.assertEqual(limited.stop(), 0)

    # --- Health and metrics ----------------------------------------------------------------

    def health(self, channel, service, timeout=PATIENCE_S):
        check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                    request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                    response_deserializer=health_pb2.HealthCheckResponse.FromString)
        return check(health_pb2.HealthCheckRequest(service=service), timeout=timeout).status

    def test_health(self):
        SERVING = health_pb2.HealthCheckResponse.SERVING
        self.assertEqual(self.health(self.channel, ""), SERVING)
        self.assertEqual(self.health(self.channel, "walklist.v1.StockService"), SERVING)
        self.assert_error(grpc.StatusCode.NOT_FOUND, self.health, self.channel, "no.such.Service")

    def health_watch(self, channel, service):
        watch = channel.unary_stream("/grpc.health.v1.Health/Watch",
                                     request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                                     response_deserializer=health_pb2.HealthCheckResponse.FromString)
        return watch(health_pb2.HealthCheckRequest(service=service), timeout=PATIENCE_S)

    def test_health_watch(self):
        # The status at once, without a key; an unknown service is SERVICE_UNKNOWN on a stream
        # that stays open (the gRPC health protocol), not an error.
        for service, status in (("", health_pb2.HealthCheckResponse.SERVING),
                                ("walklist.v1.StockService", health_pb2.HealthCheckResponse.SERVING),
                                ("no.such.Service", health_pb2.HealthCheckResponse.SERVICE_UNKNOWN)):
            stream = self.health_watch(self.channel, service)
            self.assertEqual(next(stream).status, status, service)
            stream.cancel()
        # A request that is not a HealthCheckRequest: INVALID_ARGUMENT, and no stream starts.
        raw = self.channel.unary_stream("/grpc.health.v1.Health/Watch")
        with self.assertRaises(grpc.RpcError) as caught:
            list(raw(b"\x0a\xff", timeout=PATIENCE_S))
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_health_watch_follows_the_database(self):
        link = DatabaseLink()
        server = Walklistd(conninfo=link.conninfo)
        channel = server.channel()
        try:
            stream = self.health_watch(channel, "")
            self.assertEqual(next(stream).status, health_pb2.HealthCheckResponse.SERVING)
            link.cut()
            self.assertEqual(next(stream).status, health_pb2.HealthCheckResponse.NOT_SERVING)
            link.restore()
            self.assertEqual(next(stream).status, health_pb2.HealthCheckResponse.SERVING)
            stream.cancel()
        finally:
            channel.close()
            server.stop()
            link.close()

    def test_health_watch_follows_the_shutdown(self):
        server = Walklistd()
        channel = server.channel()
        try:
            stream = self.health_watch(channel, "")
            self.assertEqual(next(stream).status, health_pb2.HealthCheckResponse.SERVING)
            # Nothing more while nothing changes (the stream looks every second).
            pool = concurrent.futures.ThreadPoolExecutor(1)
            following = pool.submit(next, stream)
            time.sleep(2.5)
            self.assertFalse(following.done())
            server.process.send_signal(signal.SIGTERM)
            self.assertEqual(following.result(PATIENCE_S).status,
                             health_pb2.HealthCheckResponse.NOT_SERVING)
            with self.assertRaises(grpc.RpcError) as caught:
                next(stream)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.UNAVAILABLE)
            self.assertEqual(server.process.wait(PATIENCE_S), 0)
            pool.shutdown()
        finally:
            channel.close()
            self.assertEqual(server.stop(), 0)

    def test_metrics(self):
        self.create_list("Counted", ["A"])
        self.assert_error(grpc.StatusCode.PERMISSION_DENIED, self.stock_stub.ExportStock,
                          stock_pb2.ExportStockRequest(), metadata=metadata(self.lists))
        # A call is counted once gRPC's core reports it closed, which may come after the client
        # has its status.
        poll("the denied call to be counted", lambda: self.server.metric(
            "walklist_grpc_calls_total",
            '{method="/walklist.v1.StockService/ExportStock",code="PERMISSION_DENIED"}') > 0)
        text = self.server.metrics()
        self.assertRegex(text, r'walklist_grpc_calls_total\{method="/walklist.v1.LocateListService/'
                               r'CreateLocateList",code="OK"\} [1-9]')

    def test_log_line_fields(self):
        """A call's log line: time first (RFC 3339, UTC, ms), client, bytes of the reply, and a
        valid traceparent's trace-id and parent-id (an invalid one ignored)."""
        trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
        valid = f"00-{trace}-{parent}-01"

        def list_stock_lines():
            return [json.loads(line) for line in self.server.text().splitlines()
                    if '"msg":"grpc call"' in line and "/ListStock" in line]

        before = len(list_stock_lines())
        for traceparent in (valid, valid.upper()):
            self.stock_stub.ListStock(stock_pb2.ListStockRequest(page_size=1),
                                      metadata=metadata(self.all) + (("traceparent", traceparent),))
        lines = poll("both calls' log lines",
                     lambda: list_stock_lines()[before:] if len(list_stock_lines()) >= before + 2
                     else None)
        for line in lines:
            self.assertEqual(list(line)[0], "time")
            self.assertRegex(line["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            self.assertEqual(line["client"], "127.0.0.1")
            self.assertEqual(line["code"], "OK")
            self.assertGreater(line["bytes"], 0)
        traced = [line for line in lines if "traceId" in line]
        self.assertEqual([(line["traceId"], line["parentId"]) for line in traced], [(trace, parent)])
        self.assertEqual(len(lines) - len(traced), 1)  # the upper-case one is ignored

    # --- Deadlines, cancellation, shutdown -------------------------------------------------

    def blocked_server(self):
        """A walklistd with one gRPC worker, held by a load that waits on a row lock of ours."""
        server = Walklistd("--grpc-threads", "1", "--db-timeout-ms", "600000", "--rate-limit-locate-lists", HIGH,
                           "--rate-limit-shared", HIGH)
        target = self.create_list("Held", ["SKU-1001"])
        lock = RowLock(target.id)
        channel = server.channel()
        scanner = scanner_pb2_grpc.ScannerServiceStub(channel)
        held = scanner.LoadLocateList.future(scanner_pb2.LoadLocateListRequest(id=target.id),
                                             metadata=metadata(self.all))
        poll("the load to wait on the row lock", waiting_on_lock)
        return server, channel, lock, held

    def assert_abandoned(self, server, lock, held, name):
        """Lets the held load finish, then checks that the queued creation ended without an answer
        of its own (CANCELLED in /metrics) and wrote nothing."""
        lock.release()
        self.assertEqual(held.result(PATIENCE_S).name, "Held")
        poll("every call to end", lambda: server.metric("walklist_grpc_calls_in_flight") == 0)
        method = '{method="/walklist.v1.LocateListService/CreateLocateList",code="CANCELLED"}'
        self.assertEqual(server.metric("walklist_grpc_calls_total", method), 1)
        self.assertEqual(sql(f"SELECT count(*) FROM locate_lists WHERE name = '{name}'"), [["0"]])

    def test_deadline_exceeded_abandons_the_call(self):
        server, channel, lock, held = self.blocked_server()
        try:
            stub = locate_list_pb2_grpc.LocateListServiceStub(channel)
            queued = stub.CreateLocateList.future(
                locate_list_pb2.CreateLocateListRequest(name="Too late", codes=["A"]),
                metadata=metadata(self.all), timeout=2)
            poll("the second call to reach walklistd",
                 lambda: server.metric("walklist_grpc_calls_in_flight") == 2 or queued.done())
            with self.assertRaises(grpc.RpcError) as caught:
                queued.result(PATIENCE_S)
            self.assertEqual(caught.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
            # The server's own deadline for the call counts from its arrival, which a busy
            # machine may delay; the client's cancellation at its deadline (RST_STREAM) travels
            # ahead of this call on the same connection, and walklistd answers an unknown method
            # on the completion queue's thread: once it is answered, the cancellation has been
            # seen, whatever the server's clock says.
            self.assert_error(grpc.StatusCode.UNIMPLEMENTED, channel.unary_unary("/x.Y/Z"), b"")
            self.assert_abandoned(server, lock, held, "Too late")
        finally:
            channel.close()
            self.assertEqual(server.stop(), 0)

    def test_cancellation_abandons_the_call(self):
        server, channel, lock, held = self.blocked_server()
        try:
            stub = locate_list_pb2_grpc.LocateListServiceStub(channel)
            queued = stub.CreateLocateList.future(
                locate_list_pb2.CreateLocateListRequest(name="Cancelled", codes=["A"]), metadata=metadata(self.all))
            poll("the second call to reach walklistd", lambda: server.metric("walklist_grpc_calls_in_flight") == 2)
            self.assertTrue(queued.cancel())
            # The cancellation (RST_STREAM) travels ahead of this call on the same connection, and
            # walklistd answers an unknown method on the completion queue's thread: once it is
            # answered, the cancellation has been seen.
            self.assert_error(grpc.StatusCode.UNIMPLEMENTED, channel.unary_unary("/x.Y/Z"), b"")
            self.assert_abandoned(server, lock, held, "Cancelled")
        finally:
            channel.close()
            self.assertEqual(server.stop(), 0)

    def test_deadline_stops_the_running_statement(self):
        """A call whose statement is held at the database past the call's deadline, over gRPC
        and over Connect: the call ends at its deadline and its statement is given up (its
        backend stops waiting on our lock while we still hold it), nothing of it stays, and the
        worker it held serves the next call. Without the deadline, the statement would wait on
        until walklistd's statement_timeout (30 s): everything here must happen well before."""
        well_before_s = 15
        server = Walklistd("--grpc-threads", "1", "--threads", "1", "--db-timeout-ms", "600000",
                           "--rate-limit-locate-lists", HIGH, "--rate-limit-shared", HIGH)
        channel = server.channel()
        try:
            scanner = scanner_pb2_grpc.ScannerServiceStub(channel)
            for transport in ("gRPC", "Connect"):
                target = self.create_list(f"Held past its deadline ({transport})", ["SKU-1001"])
                lock = RowLock(target.id)
                request = scanner_pb2.LoadLocateListRequest(id=target.id)
                if transport == "gRPC":
                    load = scanner.LoadLocateList.future(request, metadata=metadata(self.all), timeout=5)
                    poll("the load to wait on the row lock", waiting_on_lock)
                    with self.assertRaises(grpc.RpcError) as caught:
                        load.result(PATIENCE_S)
                    self.assertEqual(caught.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
                else:
                    # Answered while the lock is still held: the wait was given up.
                    started = time.monotonic()
                    status, body = server.connect("/walklist.v1.ScannerService/LoadLocateList", request,
                                                  self.all, {"Connect-Timeout-Ms": "2000"})
                    self.assertEqual(body["code"], "deadline_exceeded", (status, body))
                    self.assertLess(time.monotonic() - started, well_before_s)
                poll(f"the {transport} load's statement to stop waiting on the lock",
                     lambda: not waiting_on_lock(), well_before_s)
                lock.release()
                self.assertEqual(sql(f"SELECT state FROM locate_lists WHERE id = '{target.id}'"), [["pending"]])
            self.assertEqual(self.health(channel, ""), health_pb2.HealthCheckResponse.SERVING)
            created = locate_list_pb2_grpc.LocateListServiceStub(channel).CreateLocateList(
                locate_list_pb2.CreateLocateListRequest(name="After the deadline", codes=["A"]),
                metadata=metadata(self.all))
            self.assertEqual(created.name, "After the deadline")
        finally:
            channel.close()
            self.assertEqual(server.stop(), 0)

    def test_graceful_shutdown_finishes_calls_in_flight(self):
        server, channel, lock, held = self.blocked_server()
        try:
            server.process.send_signal(signal.SIGTERM)
            poll("walklistd to begin its shutdown", lambda: '"msg":"stopping"' in server.text())
            # No new call is taken (GOAWAY, the listener closed)...
            def refused():
                with server.channel() as fresh:
                    try:
                        self.health(fresh, "", timeout=1)
                    except grpc.RpcError as e:
                        return e.code() == grpc.StatusCode.UNAVAILABLE
                return False
            poll("new calls to be refused", refused)
            # ...while the call in flight finishes with its answer.
            lock.release()
            loaded = held.result(PATIENCE_S)
            self.assertEqual(loaded.name, "Held")
            self.assertEqual(sql(f"SELECT state FROM locate_lists WHERE id = '{loaded.id}'"), [["loaded"]])
            self.assertEqual(server.process.wait(PATIENCE_S), 0)
        finally:
            channel.close()
            self.assertEqual(server.stop(), 0)

    # --- TLS -------------------------------------------------------------------------------

    def test_tls_with_alpn_h2(self):
        cert, key_file = os.path.join(RUN_DIR, "tls.crt"), os.path.join(RUN_DIR, "tls.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "2", "-keyout", key_file, "-out", cert, "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
        server = Walklistd("--tls-cert", cert, "--tls-key", key_file, "--rate-limit-locate-lists", HIGH,
                           "--rate-limit-shared", HIGH)
        try:
            with open(cert, "rb") as f:
                credentials = grpc.ssl_channel_credentials(root_certificates=f.read())
            with grpc.secure_channel(server.target, credentials) as channel:
                self.assertEqual(self.health(channel, ""), health_pb2.HealthCheckResponse.SERVING)
                stub = locate_list_pb2_grpc.LocateListServiceStub(channel)
                created = stub.CreateLocateList(locate_list_pb2.CreateLocateListRequest(name="Over TLS", codes=["A"]),
                                                metadata=metadata(self.all))
                self.assertEqual(created.codes_count, 1)
            s_client = subprocess.run(["openssl", "s_client", "-connect", server.target, "-alpn", "h2",
                                       "-CAfile", cert], input=b"", capture_output=True, timeout=PATIENCE_S)
            self.assertIn(b"ALPN protocol: h2", s_client.stdout)
            with server.channel() as plain:  # cleartext to a TLS port: no answer
                self.assert_error(grpc.StatusCode.UNAVAILABLE, self.health, plain, "")
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
