// StreamExportStock and WatchStock's catch-up driven by @connectrpc/connect-node, on a catalogue
// larger than a unary message may carry (organization connect-stream, made by run.sh with
// `walklistctl generate`): over the Connect protocol (HTTP/1.1 server streaming, binary and JSON,
// with and without gzip both ways) and over gRPC (connect-node's gRPC transport on walklistd's
// --grpc-listen port; and @grpc/grpc-js with @grpc/proto-loader, gzip both ways). Every stream must be the REST export of the same snapshot exactly: items,
// order and cursor, in messages far below the 4 MiB gRPC clients take by default.
//
// run.sh sets the environment: WALKLIST_URL, WALKLIST_GRPC_URL, WALKLIST_GEN_DIR,
// WALKLIST_KEY_STREAM (stock:read and inventory:write of connect-stream), WALKLIST_KEY_LISTS (a
// key without stock:read), WALKLIST_KEY_OTHER_ORG (another organization's), WALKLISTCTL and
// WALKLIST_DB_CONNINFO (the catch-up's imports), WALKLIST_PROTO_DIR (proto/, for proto-loader).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, test } from "node:test";
import { pathToFileURL } from "node:url";

import grpcJs from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";
import { toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";

function required(name) {
  const value = process.env[name];
  assert.ok(value, `${name} is not set: run through tests/connect-client/run.sh (ctest)`);
  return value;
}

const baseUrl = required("WALKLIST_URL");
const grpcUrl = required("WALKLIST_GRPC_URL");
const key = required("WALKLIST_KEY_STREAM");
const listsKey = required("WALKLIST_KEY_LISTS");
const otherOrgKey = required("WALKLIST_KEY_OTHER_ORG");
const genDir = required("WALKLIST_GEN_DIR");
const { StockService, StreamExportStockResponseSchema, WatchStockResponseSchema } = await import(
  pathToFileURL(path.join(genDir, "walklist/v1/stock_pb.js")).href);

// A message is cut once it holds 1 MiB: at most one item and the closing fields more.
const MESSAGE_MAX = 1024 * 1024 + 512;

function bearer(token) {
  return (next) => async (req) => {
    if (token !== undefined) req.header.set("Authorization", `Bearer ${token}`);
    return next(req);
  };
}

// Each transport with the coding its answers came in (the stream's header).
function transports(token) {
  const make = (name, grpc, binary, gzip) => {
    const codings = [];
    const options = {
      baseUrl: grpc ? grpcUrl : baseUrl,
      httpVersion: grpc ? "2" : "1.1",
      useBinaryFormat: binary,
      interceptors: [bearer(token), (next) => async (req) => {
        const res = await next(req);
        codings.push(res.header.get(grpc ? "grpc-encoding" : "connect-content-encoding"));
        return res;
      }],
      ...(gzip ? { sendCompression: compressionGzip, acceptCompression: [compressionGzip], compressMinBytes: 0 }
        : { acceptCompression: [] }),
    };
    return { name, gzip, codings, transport: grpc ? createGrpcTransport(options) : createConnectTransport(options) };
  };
  return [
    make("Connect, binary", false, true, false),
    make("Connect, JSON", false, false, false),
    make("Connect, binary, gzip both ways", false, true, true),
    make("Connect, JSON, gzip both ways", false, false, true),
    make("gRPC", true, true, false),
    make("gRPC, gzip both ways", true, true, true),
  ];
}

// GET /api/v1/stock-export (with since: the delta) as JSON.
async function rest(since) {
  const res = await fetch(`${baseUrl}/api/v1/stock-export${since ? `?since=${encodeURIComponent(since)}` : ""}`,
    { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200);
  return res.json();
}

const itemLine = (i) => `${i.sku}\t${i.qty}\t${i.location ?? null}\t${i.change?.case === "removed" ? true : null}`;
const restLine = (i) => `${i.sku}\t${i.qty}\t${i.location}\t${i.removed ?? null}`;

function assertSameItems(got, want) {
  assert.equal(got.length, want.length, "item count");
  for (let n = 0; n < want.length; n++) {
    if (got[n] !== want[n]) assert.fail(`item ${n}: ${got[n]} instead of ${want[n]}`);
  }
}

async function collect(stream) {
  const messages = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

function assertSameAsRest(messages, expected) {
  assert.ok(messages.length > 0);
  for (const m of messages) {
    assert.ok(toBinary(StreamExportStockResponseSchema, m).length <= MESSAGE_MAX, "a message over the bound");
  }
  for (const m of messages.slice(0, -1)) {
    assert.equal(m.cursor, "");
    assert.equal(m.generatedAt, undefined);
  }
  const last = messages[messages.length - 1];
  assert.equal(last.cursor, expected.cursor);
  assert.notEqual(last.generatedAt, undefined);
  assertSameItems(messages.flatMap((m) => m.items.map(itemLine)), expected.items.map(restLine));
}

describe("StreamExportStock", () => {
  for (const t of transports(key)) {
    test(`${t.name}: the REST export's items and cursor, in bounded messages`, async () => {
      const expected = await rest();
      assert.ok(expected.items.length > 100000, `only ${expected.items.length} items`);
      const messages = await collect(createClient(StockService, t.transport).streamExportStock({}));
      assert.ok(messages.length > 1);
      assertSameAsRest(messages, expected);
      assert.deepEqual(t.codings, [t.gzip ? "gzip" : null]);
    });
  }

  test("a since delta: the REST delta's items and cursor", async () => {
    const before = await rest();
    const { InventoryService } = await import(pathToFileURL(path.join(genDir, "walklist/v1/inventory_pb.js")).href);
    const [{ transport }] = transports(key);
    const skus = before.items.slice(2000, 2004).map((i) => i.sku);
    const breakdown = await createClient(StockService, transport).listStock({ sku: skus[0] });
    const warehouse = breakdown.items.find((i) => i.warehouseKind === "own").warehouse;
    await createClient(InventoryService, transport).setStock({
      items: skus.map((sku, n) => ({ sku, warehouse, onHand: BigInt(555000 + n) })),
    });
    const expected = await rest(before.cursor);
    assert.deepEqual(expected.items.map((i) => i.sku), skus);
    for (const t of transports(key)) {
      const messages = await collect(createClient(StockService, t.transport).streamExportStock({ since: before.cursor }));
      assert.equal(messages.length, 1, t.name);
      assertSameAsRest(messages, expected);
    }
  });

  test("bad input: a clear code, no message", async () => {
    const { cursor } = await rest();
    const otherCursor = (await (await fetch(`${baseUrl}/api/v1/stock-export`,
      { headers: { Authorization: `Bearer ${otherOrgKey}` } })).json()).cursor;
    const cases = [
      [key, { since: "garbage" }, Code.InvalidArgument],
      [key, { since: otherCursor }, Code.InvalidArgument],
      [key, { since: `${cursor}x` }, Code.InvalidArgument],
      [listsKey, {}, Code.PermissionDenied],
      [undefined, {}, Code.Unauthenticated],
    ];
    for (const [token, request, code] of cases) {
      for (const t of transports(token)) {
        let error;
        try {
          for await (const _ of createClient(StockService, t.transport).streamExportStock(request)) {
            assert.fail(`${t.name}: a message came before the error`);
          }
        } catch (e) {
          error = e;
        }
        assert.ok(error instanceof ConnectError, `${t.name}: ${error}`);
        assert.equal(Code[error.code], Code[code], `${t.name}: ${error.rawMessage}`);
        assert.ok(error.rawMessage.length > 0);
      }
    }
  });
});

// @grpc/grpc-js, as docs/clients.md shows it: proto-loader reads proto/ at run time.
function grpcJsStock() {
  const protoDir = required("WALKLIST_PROTO_DIR");
  const definition = protoLoader.loadSync("walklist/v1/stock.proto", {
    includeDirs: [protoDir], longs: String, defaults: true, oneofs: true,
  });
  const { walklist } = grpcJs.loadPackageDefinition(definition);
  // Requests gzip-coded (gzip answers are taken by default).
  return new walklist.v1.StockService(new URL(grpcUrl).host, grpcJs.credentials.createInsecure(),
    { "grpc.default_compression_algorithm": 2 });
}

describe("StreamExportStock with @grpc/grpc-js", () => {
  test("gzip both ways: the REST export's items and cursor, in bounded messages", async () => {
    const expected = await rest();
    const stock = grpcJsStock();
    const metadata = new grpcJs.Metadata();
    metadata.set("authorization", `Bearer ${key}`);
    const call = stock.streamExportStock({ since: "" }, metadata);
    const headers = new Promise((resolve) => call.on("metadata", resolve));
    const items = [];
    let messages = 0;
    let last;
    for await (const message of call) {
      messages++;
      if (last !== undefined) assert.equal(last.cursor, "", "a cursor before the last message");
      last = message;
      for (const i of message.items) {
        items.push(`${i.sku}\t${i.qty}\t${i.location?.value ?? null}\t${i.change === "removed" ? true : null}`);
      }
    }
    assert.ok(messages > 1);
    assert.equal(last.cursor, expected.cursor);
    assert.ok(last.generatedAt !== null);
    assertSameItems(items, expected.items.map(restLine));
    // grpc-js keeps grpc-encoding to itself (reserved metadata): that the answers come gzip-coded
    // is seen with connect-node's gRPC transport above and on the wire in e2e.grpc_python.
    assert.ok((await headers).get("ratelimit-policy")[0].includes('"stock-export"'));
    stock.close();
  });
});

describe("WatchStock", () => {
  test("a catch-up of about 200,000 changes arrives complete, in bounded messages", async () => {
    const before = await rest();
    const skus = before.items.map((i) => i.sku);
    const [{ transport }] = transports(key);
    const breakdown = await createClient(StockService, transport).listStock({ sku: skus[0] });
    const warehouse = breakdown.items.find((i) => i.warehouseKind === "own").warehouse;
    // Two writes, each changing a little under half of the export (a write changing more
    // would replace the export and start its history again).
    const half = Math.floor(skus.length / 2) - 1;
    const dir = mkdtempSync(path.join(tmpdir(), "walklist-catch-up-"));
    try {
      for (const [part, chunk] of [skus.slice(0, half), skus.slice(half, 2 * half)].entries()) {
        const file = path.join(dir, `stock-${part}.csv`);
        writeFileSync(file, `sku,warehouse,on_hand\n${chunk.map((s) => `${s},${warehouse},${700000 + part}\n`).join("")}`);
        execFileSync(required("WALKLISTCTL"), ["--database-url", required("WALKLIST_DB_CONNINFO"), "import", "stock",
          file, "--org", "connect-stream"], { stdio: "ignore" });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const expected = await rest(before.cursor);
    assert.equal(expected.items.length, 2 * half);
    for (const t of transports(key)) {
      const abort = new AbortController();
      const messages = [];
      try {
        for await (const m of createClient(StockService, t.transport).watchStock({ since: before.cursor },
          { signal: abort.signal })) {
          assert.ok(toBinary(WatchStockResponseSchema, m).length <= MESSAGE_MAX, `${t.name}: a message over the bound`);
          messages.push(m);
          if (m.cursor !== "") abort.abort();
        }
      } catch (e) {
        if (!(e instanceof ConnectError && e.code === Code.Canceled)) throw e;
      }
      assert.ok(messages.length > 4, `${t.name}: ${messages.length} messages`);
      assert.ok(messages.slice(0, -1).every((m) => m.cursor === ""), t.name);
      assert.equal(messages[messages.length - 1].cursor, expected.cursor, t.name);
      assertSameItems(messages.flatMap((m) => m.items.map(itemLine)), expected.items.map(restLine));
    }
  });
});
