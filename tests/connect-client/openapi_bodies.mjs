// e2e.zz_openapi_bodies: every REST exchange the e2e suite made, checked against the API
// description, so that a client generated from gateway/openapi.json (strict enums, closed
// objects) never rejects a real answer.
//
//   node openapi_bodies.mjs OPENAPI.json EXCHANGES_DIR [--min-exchanges N]
//
// EXCHANGES_DIR holds one <test program>.jsonl per e2e program, written by
// tests/support/exchange_log.c (one JSON object a line: method, target, status, response
// header lines, the body as the client read it). For each exchange:
//   - the operation is found by path template and method (HEAD by the GET operation, whose
//     status and headers it gives without content);
//   - its status must be described for that operation (exact, then "4XX"-style ranges, then
//     "default");
//   - the Content-Type must be one of that response's media types, and the body must validate
//     against its schema (OpenAPI 3.1: JSON Schema 2020-12 with the OAS keywords; 3.0:
//     `nullable` and the boolean exclusive bounds are converted first). $refs to
//     components resolve. Objects are closed where the description does not say otherwise: a
//     schema with `properties` and no `additionalProperties` (or unevaluated/pattern ones)
//     rejects a property it does not list, so every field the server sends is described;
//   - a response without content in the description must come without a body;
//   - headers the response marks `required` must be present, and each described header that is
//     present must validate against its schema; every answer carries X-Request-Id and, unless
//     its response describes another, `Cache-Control: no-store` (the description's prose);
//   - an error (4xx, 5xx) must also carry what the description's prose says every error
//     carries: `error.code` equal to the HTTP status, `error.status` the gRPC code name of the
//     status, and `details` ending with exactly one `google.rpc.ErrorInfo`, a `BadRequest`
//     (at most one) before it;
//   - a path no template matches must answer 404 with the Error shape, and a known path with a
//     method it does not describe 405 with the Error shape and an `Allow` header naming the
//     described methods (the description states both once, not under each operation); an
//     OPTIONS answered 204 without content is a CORS preflight (likewise).
// Exchanges cut short (the test stopped or killed walklistd mid-answer) are checked for
// status and headers only, and counted. Every mismatch is printed with its exchange (test
// program, sequence number, method, target, status) and the validation error; identical
// mismatches are grouped. Exits 1 on any mismatch not in EXPECTED_MISMATCHES, and when fewer
// than --min-exchanges exchanges (default 500), no error status or no success status were seen
// (so that it cannot pass vacuously).

import Ajv2020 from "ajv/dist/2020.js";
import AjvDraft07 from "ajv";
import addFormats from "ajv-formats";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

// Mismatches that are known and waiting for a decision: each names the exchange (test
// program, method, path template, status) and a piece of the message, and says why.
const EXPECTED_MISMATCHES = [];

// The gRPC code name of each HTTP status, as the description states it for `error.status`.
const STATUS_NAMES = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  405: "UNIMPLEMENTED",
  410: "OUT_OF_RANGE",
  413: "INVALID_ARGUMENT",
  415: "INVALID_ARGUMENT",
  422: "FAILED_PRECONDITION",
  429: "RESOURCE_EXHAUSTED",
  431: "INVALID_ARGUMENT",
  500: "INTERNAL",
  501: "UNIMPLEMENTED",
  503: "UNAVAILABLE",
};
const ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo";
const BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const BASE = "urn:walklist:openapi";

function usage() {
  console.error("usage: openapi_bodies.mjs OPENAPI.json EXCHANGES_DIR [--min-exchanges N]");
  process.exit(2);
}

const args = process.argv.slice(2);
let minExchanges = 500;
const positional = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--min-exchanges") minExchanges = Number(args[++i]);
  else positional.push(args[i]);
}
if (positional.length !== 2 || !Number.isInteger(minExchanges)) usage();
const [docPath, exchangesDir] = positional;
const doc = JSON.parse(readFileSync(docPath, "utf8"));
const oas30 = /^3\.0\./.test(doc.openapi);
if (!oas30 && !/^3\.1\./.test(doc.openapi)) {
  console.error(`openapi_bodies: OpenAPI ${doc.openapi} is not 3.0 or 3.1`);
  process.exit(2);
}

// --- Schemas --------------------------------------------------------------------------------

// A copy of schema for Ajv: $refs to #/components/schemas point into the bundle, OpenAPI 3.0's
// dialect becomes JSON Schema's, and objects are closed unless the schema says otherwise.
function prepare(schema) {
  if (Array.isArray(schema)) return schema.map(prepare);
  if (schema === null || typeof schema !== "object") return schema;
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$ref") {
      if (!value.startsWith("#/components/schemas/"))
        throw new Error(`unsupported $ref ${value} (only #/components/schemas/...)`);
      out.$ref = `${BASE}#/$defs/${value.slice("#/components/schemas/".length)}`;
    } else if (key === "properties" || key === "$defs" || key === "patternProperties") {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, prepare(v)]));
    } else {
      out[key] = prepare(value);
    }
  }
  if (oas30) {
    if (out.nullable === true) {
      if (out.type !== undefined) out.type = [].concat(out.type, "null");
      if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    }
    delete out.nullable;
    for (const [flag, bound] of [
      ["exclusiveMinimum", "minimum"],
      ["exclusiveMaximum", "maximum"],
    ]) {
      if (out[flag] === true) {
        out[flag] = out[bound];
        delete out[bound];
      } else if (out[flag] === false) delete out[flag];
    }
  }
  const open = ["additionalProperties", "unevaluatedProperties", "patternProperties"];
  if (out.properties !== undefined && !open.some((k) => k in out)) {
    if (oas30) out.additionalProperties = false;
    else out.unevaluatedProperties = false;
  }
  return out;
}

const ajvOptions = { strict: true, allErrors: true, allowUnionTypes: true, discriminator: false };
const ajv = oas30 ? new AjvDraft07(ajvOptions) : new Ajv2020(ajvOptions);
addFormats(ajv);
// The OAS keywords of the 3.1 base dialect, and 3.0's, as annotations.
const annotations = ["discriminator", "xml", "externalDocs", "example", "deprecated"];
if (oas30) annotations.push("readOnly", "writeOnly");
for (const keyword of annotations) {
  try {
    ajv.addKeyword(keyword);
  } catch {
    // already one of the dialect's own keywords
  }
}
const intFormat = (bits) => ({
  type: "number",
  validate: (x) => Number.isInteger(x) && x >= -(2 ** (bits - 1)) && x <= 2 ** (bits - 1) - 1,
});
ajv.addFormat("int32", intFormat(32));
ajv.addFormat("int64", intFormat(64));
ajv.addFormat("float", { type: "number", validate: () => true });
ajv.addFormat("double", { type: "number", validate: () => true });
const bundle = { $id: BASE, $defs: {} };
for (const [name, schema] of Object.entries(doc.components?.schemas ?? {}))
  bundle.$defs[name] = prepare(schema);
ajv.addSchema(bundle);

const compiled = new Map();
function validator(key, schema) {
  if (!compiled.has(key)) compiled.set(key, ajv.compile(prepare(schema)));
  return compiled.get(key);
}
const errorInfoValidator = () =>
  validator("ErrorInfo", { $ref: "#/components/schemas/ErrorInfo" });

function describeErrors(errors) {
  const lines = (errors ?? []).map((e) => {
    let extra = "";
    if (e.keyword === "unevaluatedProperties" || e.keyword === "additionalProperties")
      extra = ` (undeclared property "${e.params.unevaluatedProperty ?? e.params.additionalProperty}")`;
    else if (e.keyword === "enum") extra = ` (${JSON.stringify(e.params.allowedValues)})`;
    else if (e.keyword === "const") extra = ` (${JSON.stringify(e.params.allowedValue)})`;
    return `${e.instancePath || "/"} ${e.message}${extra}`;
  });
  return [...new Set(lines)].join("; ");
}

// --- The description ------------------------------------------------------------------------

function deref(object) {
  let seen = 0;
  let merged = {};
  while (object?.$ref !== undefined) {
    const { $ref, ...siblings } = object;
    merged = { ...siblings, ...merged }; // a Reference Object's summary/description win
    if (!$ref.startsWith("#/") || ++seen > 20) throw new Error(`unsupported $ref ${$ref}`);
    object = $ref
      .slice(2)
      .split("/")
      .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
      .reduce((node, part) => node?.[part], doc);
    if (object === undefined) throw new Error(`unresolved $ref ${$ref}`);
  }
  return { ...object, ...merged };
}

const templates = Object.keys(doc.paths ?? {}).map((template) => ({
  template,
  parts: template.split("/"),
  item: deref(doc.paths[template]),
  concrete: !template.includes("{"),
}));

// The path template of path: concrete paths first (OpenAPI's rule), then templates.
function findPath(path) {
  const parts = path.split("/");
  const matches = templates.filter(
    (t) =>
      t.parts.length === parts.length &&
      t.parts.every((p, i) => (/^\{[^}]+\}$/.test(p) ? parts[i] !== "" : p === parts[i])),
  );
  return matches.find((t) => t.concrete) ?? matches[0];
}

function describedMethods(item) {
  const methods = METHODS.filter((m) => item[m] !== undefined).map((m) => m.toUpperCase());
  if (methods.includes("GET") && !methods.includes("HEAD")) methods.push("HEAD");
  return methods;
}

function findResponse(operation, status) {
  const responses = operation.responses ?? {};
  const key = [String(status), `${String(status)[0]}XX`, "default"].find(
    (k) => responses[k] !== undefined,
  );
  return key === undefined ? undefined : { key, response: deref(responses[key]) };
}

function mediaTypeMatch(content, contentType) {
  const media = (contentType ?? "").split(";")[0].trim().toLowerCase();
  const keys = Object.keys(content);
  const key =
    keys.find((k) => k.toLowerCase() === media) ??
    keys.find((k) => k.endsWith("/*") && media.startsWith(k.slice(0, -1).toLowerCase())) ??
    keys.find((k) => k === "*/*");
  return { media, key };
}

// --- Checking one exchange ------------------------------------------------------------------

// A header's value, its field lines combined as one list (RFC 9110, 5.3); undefined when absent.
function header(exchange, name) {
  const values = exchange.headers
    .filter(([n]) => n.toLowerCase() === name.toLowerCase())
    .map(([, value]) => value);
  return values.length === 0 ? undefined : values.join(", ");
}

function bodyText(exchange) {
  if (exchange.body !== undefined) return exchange.body;
  if (exchange.bodyBase64 !== undefined) return Buffer.from(exchange.bodyBase64, "base64");
  return "";
}

function parseJson(text) {
  if (typeof text !== "string") return { error: "the body is not UTF-8" };
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    return { error: `the body is not JSON (${e.message})` };
  }
}

// What the description's prose says every error body carries.
function checkErrorBody(body, status, problems) {
  const error = body?.error;
  if (error === null || typeof error !== "object") return; // the schema says so already
  if (error.code !== status) problems.push(`error.code is ${error.code}, not the status ${status}`);
  if (STATUS_NAMES[status] !== undefined && error.status !== STATUS_NAMES[status])
    problems.push(`error.status is ${error.status}, the description says ${STATUS_NAMES[status]}`);
  const details = Array.isArray(error.details) ? error.details : [];
  const infos = details.filter((d) => d?.["@type"] === ERROR_INFO_TYPE);
  const last = details[details.length - 1];
  if (infos.length !== 1 || last?.["@type"] !== ERROR_INFO_TYPE) {
    problems.push(
      `details must end with exactly one google.rpc.ErrorInfo (found ${infos.length}, last ${last?.["@type"]})`,
    );
  } else if (!errorInfoValidator()(last)) {
    problems.push(`the ErrorInfo: ${describeErrors(errorInfoValidator().errors)}`);
  }
  const badRequests = details
    .map((d, i) => (d?.["@type"] === BAD_REQUEST_TYPE ? i : -1))
    .filter((i) => i >= 0);
  if (badRequests.length > 1) problems.push(`${badRequests.length} BadRequest details, not one`);
  if (badRequests.some((i) => i === details.length - 1))
    problems.push("a BadRequest after the ErrorInfo");
}

function checkHeaders(exchange, response, label, problems) {
  for (const [name, declared] of Object.entries(response.headers ?? {})) {
    if (name.toLowerCase() === "content-type") continue; // ignored by OpenAPI
    const h = deref(declared);
    const value = header(exchange, name);
    if (value === undefined) {
      if (h.required) problems.push(`required header ${name} is missing`);
      continue;
    }
    if (h.schema === undefined) continue;
    const schema = deref(h.schema);
    const types = [].concat(schema.type ?? []);
    let parsed = value;
    if ((types.includes("integer") || types.includes("number")) && /^-?[0-9]+(\.[0-9]+)?$/.test(value))
      parsed = Number(value);
    const validate = validator(`${label} header ${name}`, h.schema);
    if (!validate(parsed))
      problems.push(`header ${name}: ${JSON.stringify(value)} ${describeErrors(validate.errors)}`);
  }
}

// What the description's prose says of every answer's headers, where the response does not
// declare the header itself: "Every response carries X-Request-Id", and "Cache-Control:
// no-store" except where a response declares its own (the stock export's no-cache).
function checkProseHeaders(exchange, response, problems) {
  const declared = Object.keys(response?.headers ?? {}).map((n) => n.toLowerCase());
  if (!declared.includes("x-request-id") && header(exchange, "X-Request-Id") === undefined)
    problems.push("required header X-Request-Id is missing");
  const cache = header(exchange, "Cache-Control");
  if (!declared.includes("cache-control") && cache !== "no-store")
    problems.push(`Cache-Control is ${cache ?? "(none)"}, not no-store`);
}

function checkBody(exchange, response, label, problems) {
  const content = response.content ?? {};
  const text = bodyText(exchange);
  const empty = text.length === 0;
  if (exchange.method === "HEAD") {
    if (!empty) problems.push("a HEAD answer with content");
    return;
  }
  if (Object.keys(content).length === 0) {
    if (!empty) problems.push(`content (${exchange.bodyBytes} bytes) where the description has none`);
    return;
  }
  if (exchange.omitted) return; // too large to record: counted
  if (empty) {
    problems.push("no content where the description has some");
    return;
  }
  const contentType = header(exchange, "Content-Type");
  const { media, key } = mediaTypeMatch(content, contentType);
  if (key === undefined) {
    problems.push(
      `Content-Type ${contentType ?? "(none)"} is not among ${Object.keys(content).join(", ")}`,
    );
    return;
  }
  const schema = content[key].schema;
  const json = /^application\/([a-z0-9.+-]+\+)?json$/.test(media);
  let instance = text;
  if (json) {
    const parsed = parseJson(text);
    if (parsed.error !== undefined) {
      problems.push(parsed.error);
      return;
    }
    instance = parsed.value;
  }
  if (schema !== undefined) {
    const validate = validator(`${label} ${key}`, schema);
    if (!validate(instance)) problems.push(describeErrors(validate.errors));
  }
  if (json && exchange.status >= 400) checkErrorBody(instance, exchange.status, problems);
}

const errorSchema = { $ref: "#/components/schemas/Error" };

// The rules the description states once for every path: 404 for unknown paths, 405 (with
// Allow) for methods a path does not describe, 204 for a CORS preflight.
function checkUndescribed(exchange, item, problems) {
  const allowed = item ? describedMethods(item) : [];
  checkProseHeaders(exchange, undefined, problems);
  if (exchange.method === "OPTIONS" && item && exchange.status === 204) {
    if (bodyText(exchange).length !== 0) problems.push("a 204 preflight with content");
    return item ? "(preflight)" : "(unknown path)";
  }
  const expected = item ? 405 : 404;
  if (exchange.status !== expected) {
    problems.push(
      item
        ? `status ${exchange.status} for a method the path does not describe (expected 405; described: ${allowed.join(", ")})`
        : `status ${exchange.status} for a path no template matches (expected 404)`,
    );
  }
  if (item && exchange.status === 405) {
    const allow = (header(exchange, "Allow") ?? "").split(",").map((m) => m.trim()).filter(Boolean);
    if (allow.length === 0) problems.push("a 405 without Allow");
    const extra = allow.filter((m) => !allowed.includes(m) && m !== "OPTIONS");
    const missing = allowed.filter((m) => !allow.includes(m));
    if (extra.length || missing.length)
      problems.push(`Allow: ${allow.join(", ")}; the description has ${allowed.join(", ")}`);
  }
  if (exchange.status >= 400 && exchange.method !== "HEAD") {
    const text = bodyText(exchange);
    const parsed = parseJson(text);
    if (!/^application\/json\b/i.test(header(exchange, "Content-Type") ?? ""))
      problems.push(`Content-Type ${header(exchange, "Content-Type") ?? "(none)"}, not application/json`);
    else if (parsed.error !== undefined) problems.push(parsed.error);
    else {
      const validate = validator("Error", errorSchema);
      if (!validate(parsed.value)) problems.push(describeErrors(validate.errors));
      checkErrorBody(parsed.value, exchange.status, problems);
    }
  }
  return item ? "(method not described)" : "(unknown path)";
}

// The ErrorInfo reason of an error body, or undefined.
function errorReason(exchange) {
  const parsed = parseJson(bodyText(exchange));
  const details = parsed.value?.error?.details;
  return Array.isArray(details) ? details[details.length - 1]?.reason : undefined;
}

function checkExchange(exchange) {
  const problems = [];
  const path = exchange.target.split("?")[0];
  let found = findPath(path);
  // A listener that serves none of the API (walklistd's --ops-listen serves the document only)
  // answers a described path as an unknown one: the unknown-path rule applies.
  if (found && exchange.status === 404 && errorReason(exchange) === "ENDPOINT_NOT_FOUND")
    found = undefined;
  const method = exchange.method.toLowerCase();
  const operation =
    found?.item[method] ?? (method === "head" ? found?.item.get : undefined) ?? undefined;
  if (operation === undefined) {
    const template = checkUndescribed(exchange, found?.item, problems);
    return { template: found ? `${found.template} ${template}` : template, problems };
  }
  const template = `${exchange.method} ${found.template}`;
  const match = findResponse(operation, exchange.status);
  if (match === undefined) {
    problems.push(
      `status ${exchange.status} is not described (described: ${Object.keys(operation.responses ?? {}).join(", ")})`,
    );
    return { template, problems };
  }
  const label = `${template} ${match.key}`;
  checkHeaders(exchange, match.response, label, problems);
  checkProseHeaders(exchange, match.response, problems);
  if (exchange.bodyError !== undefined) problems.push(exchange.bodyError);
  else if (exchange.complete) checkBody(exchange, match.response, label, problems);
  return { template, problems, responseKey: match.key };
}

// --- The run --------------------------------------------------------------------------------

let files;
try {
  files = readdirSync(exchangesDir).filter((f) => f.endsWith(".jsonl")).sort();
} catch (e) {
  console.error(`openapi_bodies: no exchanges in ${exchangesDir} (${e.code}): run the e2e tests first`);
  process.exit(1);
}

const counts = new Map(); // "METHOD template" -> Map(status -> n)
const groups = new Map(); // grouped mismatches
const expectedHits = new Map();
let total = 0;
let errors = 0;
let successes = 0;
let incomplete = 0;
let omitted = 0;
let truncated = 0;
let mismatches = 0;

for (const file of files) {
  const lines = readFileSync(join(exchangesDir, file), "utf8").split("\n");
  lines.forEach((line, index) => {
    if (line === "") return;
    let exchange;
    try {
      exchange = JSON.parse(line);
    } catch (e) {
      // A program killed while writing its last line (the only one without a newline).
      if (index === lines.length - 1) return;
      throw new Error(`${file}:${index + 1}: not JSON: ${e.message}`);
    }
    total++;
    if (exchange.status >= 400) errors++;
    else if (exchange.status >= 200 && exchange.status < 400) successes++;
    if (!exchange.complete) incomplete++;
    if (exchange.omitted) omitted++;
    if (exchange.truncated) truncated++;
    const { template, problems } = checkExchange(exchange);
    const byStatus = counts.get(template) ?? new Map();
    byStatus.set(exchange.status, (byStatus.get(exchange.status) ?? 0) + 1);
    counts.set(template, byStatus);
    for (const problem of problems) {
      const expected = EXPECTED_MISMATCHES.find(
        (x) =>
          (x.test === undefined || x.test === exchange.test) &&
          x.method === exchange.method &&
          template.endsWith(x.path) &&
          x.status === exchange.status &&
          problem.includes(x.message),
      );
      if (expected) {
        expectedHits.set(expected, (expectedHits.get(expected) ?? 0) + 1);
        continue;
      }
      mismatches++;
      // Grouped with the same problem at other array indexes.
      const general = [...new Set(problem.split("; ").map((p) => p.replace(/\/[0-9]+(?=[/ ])/g, "/*")))];
      const key = `${template} -> ${exchange.status}: ${general.join("; ")}`;
      const group = groups.get(key) ?? { count: 0, examples: [] };
      group.count++;
      if (group.examples.length < 3) {
        const body = bodyText(exchange);
        group.examples.push(
          (problem === general.join("; ") ? "" : `${problem}\n      `) +
            `${exchange.test} #${exchange.seq}${exchange.raw ? " (raw request)" : ""}: ` +
            `${exchange.method} ${exchange.target} -> ${exchange.status} ` +
            `${header(exchange, "Content-Type") ?? ""} ` +
            `${typeof body === "string" ? body.slice(0, 300) : `(${body.length} bytes)`}`,
        );
      }
      groups.set(key, group);
    }
  });
}

console.log(`openapi_bodies: ${total} exchanges from ${files.length} test programs against ${docPath}`);
for (const [template, byStatus] of [...counts].sort()) {
  const statuses = [...byStatus].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}x${n}`);
  console.log(`  ${template}: ${statuses.join(" ")}`);
}
// What the description has that the suite never saw: for information.
const unseen = [];
for (const t of templates) {
  for (const m of METHODS) {
    const operation = t.item[m];
    if (operation === undefined) continue;
    const seen = counts.get(`${m.toUpperCase()} ${t.template}`) ?? new Map();
    for (const key of Object.keys(operation.responses ?? {})) {
      if (![...seen.keys()].some((s) => String(s) === key || `${String(s)[0]}XX` === key))
        unseen.push(`${m.toUpperCase()} ${t.template} ${key}`);
    }
  }
}
if (unseen.length) console.log(`described but not seen (information): ${unseen.join(", ")}`);
console.log(
  `${errors} error answers, ${successes} others; ${incomplete} cut short (status and headers checked), ` +
    `${truncated} with arrays cut to their first items, ${omitted} too large to record`,
);
for (const [expected, n] of expectedHits)
  console.log(`expected mismatch (${n}x): ${expected.method} ${expected.path} ${expected.status}: ${expected.why}`);
for (const expected of EXPECTED_MISMATCHES.filter((x) => !expectedHits.has(x)))
  console.log(`expected mismatch no longer seen (remove it): ${expected.method} ${expected.path} ${expected.status}`);

let failed = false;
for (const [key, group] of groups) {
  failed = true;
  console.log(`\nMISMATCH (${group.count}x) ${key}`);
  for (const example of group.examples) console.log(`    ${example}`);
}
if (total < minExchanges) {
  failed = true;
  console.log(`\nFAIL: only ${total} exchanges recorded, fewer than ${minExchanges}: did the e2e tests run?`);
}
if (errors === 0 || successes === 0) {
  failed = true;
  console.log(`\nFAIL: ${errors} error and ${successes} other answers: both kinds must be checked`);
}
console.log(
  failed
    ? `\nopenapi_bodies: FAILED (${mismatches} mismatching checks in ${groups.size} kinds)`
    : "\nopenapi_bodies: every recorded answer is described",
);
process.exit(failed ? 1 : 0);
