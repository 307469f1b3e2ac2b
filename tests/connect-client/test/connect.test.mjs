// walklistd's Connect transport (the internal services' RPC) driven by a client nobody here wrote:
// @connectrpc/connect-node with code that protoc-gen-es generated from proto/. Every case runs
// twice, with the binary codec (application/proto) and with JSON (application/json).
//
// run.sh sets the environment: WALKLIST_URL (a running walklistd), WALKLIST_GEN_DIR (the
// generated code), WALKLIST_KEY_* (keys of organization connect-a, whose inventory run.sh
// imported with `walklistctl import`, and of organization connect-b, which has none).
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { pathToFileURL } from "node:url";

import { MethodOptions_IdempotencyLevel, timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport } from "@connectrpc/connect-node";

function required(name) {
  const value = process.env[name];
  assert.ok(value, `${name} is not set: run through tests/connect-client/run.sh (ctest)`);
  return value;
}

const baseUrl = required("WALKLIST_URL");
const genDir = required("WALKLIST_GEN_DIR");
const keys = {
  all: required("WALKLIST_KEY_ALL"), // lists:write, stock:read, scanner, inventory:write
  lists: required("WALKLIST_KEY_LISTS"), // lists:write
  stock: required("WALKLIST_KEY_STOCK"), // stock:read
  inventory: required("WALKLIST_KEY_INVENTORY"), // inventory:write
  otherOrg: required("WALKLIST_KEY_OTHER_ORG"), // every scope, organization connect-b
  // Every scope, organizations connect-rpc-binary and connect-rpc-json: no inventory until
  // the InventoryService tests write it.
  rpc: { binary: required("WALKLIST_KEY_RPC_BINARY"), json: required("WALKLIST_KEY_RPC_JSON") },
  revoked: required("WALKLIST_KEY_REVOKED"),
};

const generated = (file) => path.join(genDir, file);
const load = (file) => import(pathToFileURL(generated(file)).href);

const { LocateListService } = await load("walklist/v1/locate_list_pb.js");
const { StockService } = await load("walklist/v1/stock_pb.js");
const { ScannerService, CodeOutcome } = await load("walklist/v1/scanner_pb.js");
// InventoryService, when proto/ has it (else those tests are skipped; connect-a's inventory
// comes from the CSV import either way).
const inventoryProto = existsSync(generated("walklist/v1/inventory_pb.js"))
  ? await load("walklist/v1/inventory_pb.js")
  : undefined;
// google.rpc.BadRequest, the detail of invalid-argument errors, when proto/ carries it.
const errorDetails = existsSync(generated("google/rpc/error_details_pb.js"))
  ? await load("google/rpc/error_details_pb.js")
  : undefined;

// The inventory run.sh imported for connect-a (its CSV files, and what the export makes of them):
//   WH1 own: racks, STAGE staging; SUP supplier: S-1.
//   SKU-1001: WH1 on hand 10, racks A-10 4 and A-2 6, active reservation 3 (and a released 2).
//   SKU-1002: WH1 on hand 5 (held at STAGE only), SUP 100 at S-1 with 50 reserved.
//   SKU-2000: WH1 on hand 3, no rack.
const EXPECTED_EXPORT = [
  { sku: "SKU-1001", qty: 7n, location: "A-2" }, // 10 - 3; A-2 holds the most
  { sku: "SKU-1002", qty: 5n, location: undefined }, // staging and supplier racks never count
  { sku: "SKU-2000", qty: 3n, location: undefined },
];
const EXPECTED_BREAKDOWN = [
  {
    sku: "SKU-1001", warehouse: "WH1", warehouseKind: "own", onHand: 10n, reserved: 3n,
    available: 7n, locations: [{ code: "A-2", quantity: 6n, staging: false },
      { code: "A-10", quantity: 4n, staging: false }],
  },
  {
    sku: "SKU-1002", warehouse: "SUP", warehouseKind: "supplier", onHand: 100n, reserved: 50n,
    available: 50n, locations: [{ code: "S-1", quantity: 100n, staging: false }],
  },
  {
    sku: "SKU-1002", warehouse: "WH1", warehouseKind: "own", onHand: 5n, reserved: 0n,
    available: 5n, locations: [{ code: "STAGE", quantity: 5n, staging: true }],
  },
  {
    sku: "SKU-2000", warehouse: "WH1", warehouseKind: "own", onHand: 3n, reserved: 0n,
    available: 3n, locations: [],
  },
];

// Sets the Bearer key of every call (none when key is undefined).
function bearer(key) {
  return (next) => async (req) => {
    if (key !== undefined) req.header.set("Authorization", `Bearer ${key}`);
    return next(req);
  };
}

function transport(useBinaryFormat, key) {
  return createConnectTransport({
    baseUrl,
    httpVersion: "1.1",
    useBinaryFormat,
    interceptors: [bearer(key)],
  });
}

// The call's ConnectError, which must carry `code`. Connect's error JSON must have been
// decoded: a body connect-node cannot read leaves only the HTTP status ("HTTP 401").
async function expectCode(call, code) {
  let error;
  try {
    await call;
  } catch (e) {
    error = e;
  }
  assert.ok(error !== undefined, `expected ${Code[code]}, the call succeeded`);
  assert.ok(error instanceof ConnectError, `not a ConnectError: ${error}`);
  assert.equal(Code[error.code], Code[code], `message: ${error.rawMessage}`);
  assert.ok(error.rawMessage.length > 0, "the error has no message");
  assert.doesNotMatch(error.rawMessage, /^HTTP \d+$/, "the error body was not Connect's error JSON");
  return error;
}

// The fields of google.rpc.BadRequest details of an invalid-argument error.
function violatedFields(error) {
  return error.findDetails(errorDetails.BadRequestSchema)
    .flatMap((detail) => detail.fieldViolations.map((v) => v.field));
}

function assertRecent(timestamp, what) {
  assert.ok(timestamp !== undefined, `${what} is unset`);
  const ms = timestampDate(timestamp).getTime();
  assert.ok(Math.abs(ms - Date.now()) < 5 * 60 * 1000, `${what} is not now: ${timestampDate(timestamp).toISOString()}`);
}

const plainExport = (items) =>
  items.map(({ sku, qty, location }) => ({ sku, qty, location }));
const plainBreakdown = (items) =>
  items.map(({ sku, warehouse, warehouseKind, onHand, reserved, available, locations }) => ({
    sku, warehouse, warehouseKind, onHand, reserved, available,
    locations: locations.map(({ code, quantity, staging }) => ({ code, quantity, staging })),
  }));

for (const [format, binary] of [["binary (application/proto)", true], ["JSON (application/json)", false]]) {
  describe(`Connect, ${format}`, () => {
    const lists = createClient(LocateListService, transport(binary, keys.all));
    const stock = createClient(StockService, transport(binary, keys.all));
    const scanner = createClient(ScannerService, transport(binary, keys.all));
    const tag = binary ? "binary" : "json";

    test("CreateLocateList then GetLocateList: trimmed, deduplicated, pending", async () => {
      const name = `Gang 3 – Zählung ✓ (${tag})`; // non-ASCII survives both codecs
      const created = await lists.createLocateList({
        name,
        codes: [" SKU-1001 ", "4006381333931", "SKU-1001", "NOPE-1\t"],
      });
      assert.match(created.id, /^[A-Za-z0-9_-]{1,40}$/);
      assert.equal(created.name, name);
      assert.equal(created.codesCount, 3);

      const list = await lists.getLocateList({ id: created.id });
      assert.equal(list.id, created.id);
      assert.equal(list.name, name);
      assert.deepEqual(list.codes, ["SKU-1001", "4006381333931", "NOPE-1"]);
      assert.equal(list.codesCount, 3);
      assert.equal(list.state, "pending");
      assertRecent(list.createdAt, "createdAt");
      assert.equal(list.loadedAt, undefined, "loadedAt is set on a pending list");

      // The same request twice makes two lists.
      const again = await lists.createLocateList({ name, codes: ["SKU-1001"] });
      assert.notEqual(again.id, created.id);
    });

    test("gzip both ways: compressed requests, answers of 1 KiB and more compressed", async () => {
      // The coding each answer came in, as the response says it (unary or stream header).
      const codings = [];
      const gzip = createConnectTransport({
        baseUrl,
        httpVersion: "1.1",
        useBinaryFormat: binary,
        sendCompression: compressionGzip,
        acceptCompression: [compressionGzip],
        compressMinBytes: 0, // every request compressed, even the small ones
        interceptors: [bearer(keys.all), (next) => async (req) => {
          const res = await next(req);
          codings.push(res.header.get(res.stream ? "connect-content-encoding" : "content-encoding"));
          return res;
        }],
      });
      const gzipLists = createClient(LocateListService, gzip);
      const codes = Array.from({ length: 50 }, (_, i) => `GZ-${String(i).padStart(57, "0")}`);
      const created = await gzipLists.createLocateList({ name: `Gzip (${tag})`, codes });
      assert.equal(created.codesCount, 50);
      const list = await gzipLists.getLocateList({ id: created.id });
      assert.deepEqual(list.codes, codes);
      // The creation's answer is under 1 KiB; the list with its 50 codes is not.
      assert.deepEqual(codings, [null, "gzip"]);
      // WatchStock: the request's envelope compressed, the stream's messages may be. The
      // stream is cancelled after its first message (so that no socket stays open).
      const abort = new AbortController();
      const watch = createClient(StockService, gzip).watchStock({ since: "" }, { signal: abort.signal });
      try {
        for await (const message of watch) {
          assert.notEqual(message.cursor, "");
          abort.abort();
        }
      } catch (e) {
        if (!(e instanceof ConnectError && e.code === Code.Canceled)) throw e;
      }
      assert.deepEqual(codings, [null, "gzip", "gzip"]);
    });

    test("useHttpGet: the methods without side effects go as GET, the others as POST", async () => {
      // The generated code knows each method's idempotency level from proto/.
      const noSideEffects = MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
      for (const method of [LocateListService.method.getLocateList, StockService.method.exportStock,
        StockService.method.listStock, ScannerService.method.listPendingLists]) {
        assert.equal(method.idempotency, noSideEffects, method.name);
      }
      for (const method of [LocateListService.method.createLocateList,
        ScannerService.method.loadLocateList]) {
        assert.notEqual(method.idempotency, noSideEffects, method.name);
      }
      // Each answer's Cache-Control and whether it has an ETag: walklistd gives a GET answer
      // "private, no-cache" and a validator, a POST answer "no-store" (interceptors run before
      // the transport turns a call into a GET, so req.requestMethod says POST either way).
      const answered = [];
      const get = createConnectTransport({
        baseUrl,
        httpVersion: "1.1",
        useBinaryFormat: binary,
        useHttpGet: true,
        interceptors: [bearer(keys.all), (next) => async (req) => {
          const res = await next(req);
          answered.push(`${req.method.name}: ${res.header.get("cache-control")}` +
            (res.header.get("etag") !== null ? ", ETag" : ""));
          return res;
        }],
      });
      const getLists = createClient(LocateListService, get);
      const getStock = createClient(StockService, get);
      const created = await getLists.createLocateList({ name: `By GET (${tag})`, codes: ["SKU-1001"] });
      const list = await getLists.getLocateList({ id: created.id });
      assert.equal(list.state, "pending");
      assert.deepEqual(list.codes, ["SKU-1001"]);
      assert.deepEqual(plainExport((await getStock.exportStock({})).items), EXPECTED_EXPORT);
      assert.deepEqual(plainBreakdown((await getStock.listStock({ pageSize: 1000 })).items),
        EXPECTED_BREAKDOWN);
      const pending = await createClient(ScannerService, get).listPendingLists({ pageSize: 200 });
      assert.ok(pending.more || pending.lists.some((l) => l.id === created.id));
      // Errors come back as Connect errors over GET too.
      await expectCode(getLists.getLocateList({ id: "AAAAAAAAAAAAAAAAAAAAAA" }), Code.NotFound);
      const byGet = "private, no-cache, ETag";
      assert.deepEqual(answered, ["CreateLocateList: no-store", `GetLocateList: ${byGet}`,
        `ExportStock: ${byGet}`, `ListStock: ${byGet}`, `ListPendingLists: ${byGet}`]);
    });

    test("ExportStock: every SKU's available quantity and primary rack", async () => {
      const reply = await stock.exportStock({});
      assert.deepEqual(plainExport(reply.items), EXPECTED_EXPORT);
      assertRecent(reply.generatedAt, "generatedAt");
      assert.equal(reply.generatedAt.nanos % 1_000_000, 0, "generatedAt has more than milliseconds");
    });

    test("ListStock: the per-warehouse breakdown, whole and a page at a time", async () => {
      const whole = await stock.listStock({});
      assert.deepEqual(plainBreakdown(whole.items), EXPECTED_BREAKDOWN);
      assert.equal(whole.nextPageToken, "");

      const paged = [];
      let pageToken = "";
      let pages = 0;
      do {
        const page = await stock.listStock({ pageSize: 1, pageToken });
        assert.ok(page.items.length <= 1);
        paged.push(...page.items);
        pageToken = page.nextPageToken;
        assert.ok(++pages <= EXPECTED_BREAKDOWN.length + 1, "pagination does not end");
      } while (pageToken !== "");
      assert.deepEqual(plainBreakdown(paged), EXPECTED_BREAKDOWN);

      const filtered = await stock.listStock({ sku: "SKU-1002", warehouse: "SUP" });
      assert.deepEqual(plainBreakdown(filtered.items), [EXPECTED_BREAKDOWN[1]]);
    });

    test("ScannerService: the queue, loading a list once, the resolved walk", async () => {
      const created = await lists.createLocateList({
        name: `Walk (${tag})`,
        codes: ["SKU-1001", "NOPE-1"],
      });
      const queue = await scanner.listPendingLists({ pageSize: 200 });
      assert.ok(queue.lists.some((l) => l.id === created.id), "the new list is not in the queue");

      const walk = await scanner.loadLocateList({ id: created.id });
      assert.equal(walk.id, created.id);
      assertRecent(walk.loadedAt, "loadedAt");
      assert.deepEqual(
        walk.stops.map(({ binCode, warehouse, sku, quantity, code }) =>
          ({ binCode, warehouse, sku, quantity, code })),
        [
          { binCode: "A-2", warehouse: "WH1", sku: "SKU-1001", quantity: 6n, code: "SKU-1001" },
          { binCode: "A-10", warehouse: "WH1", sku: "SKU-1001", quantity: 4n, code: "SKU-1001" },
        ],
      );
      assert.deepEqual(
        walk.codes.map(({ code, outcome, skus }) => ({ code, outcome, skus })),
        [
          { code: "SKU-1001", outcome: CodeOutcome.SKU, skus: ["SKU-1001"] },
          { code: "NOPE-1", outcome: CodeOutcome.NOT_FOUND, skus: [] },
        ],
      );

      await expectCode(scanner.loadLocateList({ id: created.id }), Code.FailedPrecondition);
      const list = await lists.getLocateList({ id: created.id });
      assert.equal(list.state, "loaded");
      assertRecent(list.loadedAt, "loadedAt");
    });

    test("invalid requests: InvalidArgument", async () => {
      let error = await expectCode(
        lists.createLocateList({ name: " \t", codes: ["SKU-1001"] }), Code.InvalidArgument);
      if (errorDetails) assert.deepEqual(violatedFields(error), ["name"]);

      error = await expectCode(lists.createLocateList({ name: "Empty", codes: [] }),
        Code.InvalidArgument);
      if (errorDetails) assert.deepEqual(violatedFields(error), ["codes"]);

      const tooMany = Array.from({ length: 201 }, (_, i) => `SKU-${i}`);
      await expectCode(lists.createLocateList({ name: "Too many", codes: tooMany }),
        Code.InvalidArgument);

      await expectCode(stock.listStock({ pageSize: 1001 }), Code.InvalidArgument);
      await expectCode(stock.listStock({ pageToken: "not-a-token" }), Code.InvalidArgument);
    });

    test("no key, an unknown key, a revoked key: Unauthenticated", async () => {
      for (const key of [undefined, "wlk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", keys.revoked]) {
        const t = transport(binary, key);
        await expectCode(createClient(LocateListService, t)
          .createLocateList({ name: "x", codes: ["SKU-1001"] }), Code.Unauthenticated);
        await expectCode(createClient(StockService, t).exportStock({}), Code.Unauthenticated);
      }
    });

    test("a key without the method's scope: PermissionDenied", async () => {
      const listsOnly = transport(binary, keys.lists);
      const denied = await expectCode(createClient(StockService, listsOnly).exportStock({}),
        Code.PermissionDenied);
      // The google.rpc.ErrorInfo every error carries, as a stock client decodes it.
      const [info] = denied.findDetails(errorDetails.ErrorInfoSchema);
      assert.deepEqual([info.reason, info.domain, info.metadata],
        ["SCOPE_MISSING", "walklist.dev", { scope: "stock:read" }]);
      await expectCode(createClient(StockService, listsOnly).listStock({}),
        Code.PermissionDenied);
      await expectCode(createClient(ScannerService, listsOnly).listPendingLists({}),
        Code.PermissionDenied);
      const stockOnly = transport(binary, keys.stock);
      await expectCode(createClient(LocateListService, stockOnly)
        .createLocateList({ name: "x", codes: ["SKU-1001"] }), Code.PermissionDenied);
      await expectCode(createClient(LocateListService, stockOnly).getLocateList({ id: "x" }),
        Code.PermissionDenied);
    });

    test("an unknown list id, another organization's list: NotFound", async () => {
      await expectCode(lists.getLocateList({ id: "no-such-list" }), Code.NotFound);
      await expectCode(lists.getLocateList({ id: "" }), Code.NotFound);
      const created = await lists.createLocateList({ name: "Mine", codes: ["SKU-1001"] });
      const other = createClient(LocateListService, transport(binary, keys.otherOrg));
      await expectCode(other.getLocateList({ id: created.id }), Code.NotFound);
      // ...and the other organization sees none of connect-a's stock.
      const otherStock = createClient(StockService, transport(binary, keys.otherOrg));
      assert.deepEqual((await otherStock.exportStock({})).items, []);
    });

  });

  describe(`InventoryService, ${format}`, { skip: inventoryProto === undefined && "proto/ has no InventoryService" }, () => {
    const tag = binary ? "binary" : "json";
    // An organization of its own, empty until these tests write the CSV import's inventory.
    const inventory = inventoryProto && createClient(inventoryProto.InventoryService, transport(binary, keys.rpc[tag]));
    const stock = createClient(StockService, transport(binary, keys.rpc[tag]));

    test("writing connect-a's inventory through the service gives the same export and breakdown", async () => {
      assert.deepEqual((await stock.exportStock({})).items, []);
      let reply = await inventory.upsertWarehouses({
        warehouses: [
          { code: "WH1", name: "Main warehouse", kind: "own" },
          { code: "SUP", name: "Supplier", kind: "supplier" },
        ],
      });
      assert.equal(reply.count, 2);
      reply = await inventory.upsertLocations({
        locations: [
          { warehouse: "WH1", code: "A-10", staging: false },
          { warehouse: "WH1", code: "A-2" },
          { warehouse: "WH1", code: "STAGE", staging: true },
          { warehouse: "SUP", code: "S-1" },
        ],
      });
      assert.equal(reply.count, 4);
      reply = await inventory.upsertProducts({
        products: [
          { sku: "SKU-1001", name: "Widget", eans: ["4006381333931"] },
          { sku: "SKU-1002", name: "Gadget, blue", eans: ["4000000000001"] },
          { sku: "SKU-2000", name: "Gizmo", eans: ["4000000000001"] },
        ],
      });
      assert.equal(reply.count, 3);
      reply = await inventory.setStock({
        items: [
          { sku: "SKU-1001", warehouse: "WH1", onHand: 10n },
          { sku: "SKU-1002", warehouse: "WH1", onHand: 5n },
          { sku: "SKU-1002", warehouse: "SUP", onHand: 100n },
          { sku: "SKU-2000", warehouse: "WH1", onHand: 3n },
        ],
      });
      assert.equal(reply.count, 4);
      reply = await inventory.setLocationStock({
        items: [
          { sku: "SKU-1001", warehouse: "WH1", location: "A-10", quantity: 4n },
          { sku: "SKU-1001", warehouse: "WH1", location: "A-2", quantity: 6n },
          { sku: "SKU-1002", warehouse: "WH1", location: "STAGE", quantity: 5n },
          { sku: "SKU-1002", warehouse: "SUP", location: "S-1", quantity: 100n },
        ],
      });
      assert.equal(reply.count, 4);
      const reservations = [
        { ref: "R-1", sku: "SKU-1001", warehouse: "WH1", quantity: 3n },
        { ref: "R-2", sku: "SKU-1001", warehouse: "WH1", quantity: 2n },
        { ref: "R-3", sku: "SKU-1002", warehouse: "SUP", quantity: 50n },
      ];
      reply = await inventory.createReservations({ reservations });
      assert.equal(reply.count, 3);
      // A retried call succeeds and changes nothing.
      reply = await inventory.createReservations({ reservations: [reservations[0]] });
      assert.equal(reply.count, 1);
      reply = await inventory.releaseReservations({ refs: ["R-2"] });
      assert.equal(reply.count, 1);

      assert.deepEqual(plainExport((await stock.exportStock({})).items), EXPECTED_EXPORT);
      assert.deepEqual(plainBreakdown((await stock.listStock({})).items), EXPECTED_BREAKDOWN);
    });

    test("refused batches write nothing", async () => {
      let error = await expectCode(inventory.setStock({
        items: [
          { sku: "SKU-1001", warehouse: "WH1", onHand: 99n },
          { sku: "SKU-1001", warehouse: "W9", onHand: 1n },
        ],
      }), Code.InvalidArgument);
      if (errorDetails) assert.deepEqual(violatedFields(error), ["items[1].warehouse"]);
      error = await expectCode(inventory.upsertWarehouses({ warehouses: [] }), Code.InvalidArgument);
      if (errorDetails) assert.deepEqual(violatedFields(error), ["warehouses"]);
      await expectCode(inventory.createReservations({
        reservations: [{ ref: "R-1", sku: "SKU-1001", warehouse: "WH1", quantity: 4n }],
      }), Code.AlreadyExists);
      await expectCode(inventory.releaseReservations({ refs: ["R-2"] }), Code.FailedPrecondition);
      await expectCode(inventory.releaseReservations({ refs: ["R-1", "NOPE"] }), Code.NotFound);
      assert.deepEqual(plainExport((await stock.exportStock({})).items), EXPECTED_EXPORT);
    });

    test("releasing a reservation makes its quantity available again", async () => {
      await inventory.releaseReservations({ refs: ["R-1"] });
      const items = plainExport((await stock.exportStock({})).items);
      assert.deepEqual(items[0], { sku: "SKU-1001", qty: 10n, location: "A-2" });
    });

    test("scopes: inventory:write writes, and only writes", async () => {
      const listsOnly = createClient(inventoryProto.InventoryService, transport(binary, keys.lists));
      await expectCode(listsOnly.upsertWarehouses({ warehouses: [{ code: "X", name: "X", kind: "own" }] }),
        Code.PermissionDenied);
      const inventoryOnly = transport(binary, keys.inventory);
      await expectCode(createClient(StockService, inventoryOnly).exportStock({}),
        Code.PermissionDenied);
      await expectCode(createClient(inventoryProto.InventoryService, transport(binary, undefined))
        .upsertWarehouses({ warehouses: [{ code: "X", name: "X", kind: "own" }] }),
        Code.Unauthenticated);
    });
  });
}
