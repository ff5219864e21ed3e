/**
 * @module Requests for every operation of the document: a valid request built from its schemas
 * (path ids of real rows from the fixture), then, most of the time, mutated into an invalid or
 * hostile one: wrong types, missing and extra fields, huge and negative numbers, NaN-like
 * strings, deep nesting, unicode and control characters, traversal in names and paths, oversize
 * bodies and headers, wrong content types, malformed JSON, truncated chunks and bad
 * `Content-Range`, wrong methods, unknown paths, a missing or bad API key. Each request says what
 * answer it may get (`expect`); the oracle (oracle.ts) holds the service to it.
 */
import fc from "fast-check";
import { type Operation, methodsAt } from "./operations";
import { type Components, type Named, type Schema, jsonType, resolve, typeAllowed, typesOf, valueOf } from "./schema";

export interface Fixture {
  /** Values of path parameters that name real rows: by `<collection>.<name>` (e.g. `runners.rid`) or by `<name>`. */
  params: Record<string, string[]>;
  /** Values of body properties by name (ids and blob shas the tenant holds). */
  named: Record<string, string[]>;
}

/** What the answer may be: any non-5xx, a refusal (4xx), or one of some statuses. */
export type Expectation = { kind: "any" } | { kind: "reject" } | { kind: "status"; statuses: number[] };

export interface FuzzRequest {
  /** The operation (`METHOD /template`), or null for a path no operation has. */
  op: Operation | null;
  mutation: string;
  method: string;
  /** Path and query, as sent. */
  target: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  expect: Expectation;
  /** Sent to a deployment in `api_key` mode without a valid key. */
  apiKeyMode?: boolean;
}

const ANY: Expectation = { kind: "any" };
const REJECT: Expectation = { kind: "reject" };
const status = (...statuses: number[]): Expectation => ({ kind: "status", statuses });

/** An id no row has (a well-formed ULID). */
export const ABSENT_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV";

/** Strings that have broken parsers, paths and databases elsewhere. */
export const HOSTILE_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\u0007\u001b[31m",
  "\ud800",
  "\udfff\ud800",
  "\u202eevil",
  "\ufeff",
  "\uffff",
  "🦄".repeat(50),
  "é",
  "../../../../etc/passwd",
  "..\\..\\windows",
  "%00",
  "%2e%2e%2f",
  "'; DROP TABLE projects; --",
  '" OR 1=1 --',
  "<script>alert(1)</script>",
  "${jndi:ldap://x}",
  "__proto__",
  "constructor",
  "NaN",
  "Infinity",
  "-0",
  "1e999",
  "0x10",
  "x".repeat(100_000),
];

/** Path segments a router or a storage layer could mistake. */
const HOSTILE_SEGMENTS = [
  "..",
  "%2e%2e",
  ".",
  "a%2Fb",
  "%2F",
  "%00",
  "%ZZ",
  "%",
  "%C3%A9",
  "%F0%9F%A6%84",
  "%20",
  "x".repeat(5000),
  "-1",
  "1e3",
  "NaN",
  "%3Acancel",
  "a;b",
  "a@b",
  "~",
];

const WRONG_TYPED: unknown[] = [0, -1, 1.5, "x", "", true, false, null, [], {}, [1, 2], { a: 1 }];

type Path = (string | number)[];

/** Every place in `value` whose schema is known, with that schema (oneOf resolved by a `kind` discriminator). */
function locations(
  value: unknown,
  schema: Schema,
  components: Components,
  at: Path = [],
  out: { path: Path; schema: Schema; value: unknown }[] = [],
) {
  let s = resolve(schema, components);
  const alternatives = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (alternatives) {
    const fit = alternatives.map((a) => resolve(a, components)).filter((a) => branchFits(a, value, components));
    if (fit.length !== 1) return out;
    s = fit[0]!;
  }
  out.push({ path: at, schema: s, value });
  if (value && typeof value === "object") {
    if (Array.isArray(value)) {
      const prefix = s.prefixItems as Schema[] | undefined;
      value.forEach((v, i) => {
        const item = prefix?.[i] ?? (s.items as Schema | undefined);
        if (item) locations(v, item, components, [...at, i], out);
      });
    } else {
      const props = (s.properties ?? {}) as Record<string, Schema>;
      for (const [k, v] of Object.entries(value)) if (props[k]) locations(v, props[k]!, components, [...at, k], out);
    }
  }
  return out;
}

function branchFits(branch: Schema, value: unknown, components: Components): boolean {
  if (!typeAllowed(branch, value)) return false;
  const kind = (branch.properties as Record<string, Schema> | undefined)?.kind;
  if (kind && value && typeof value === "object" && !Array.isArray(value)) {
    const k = resolve(kind, components);
    if (Array.isArray(k.enum)) return (k.enum as unknown[]).includes((value as Record<string, unknown>).kind);
  }
  return true;
}

function setAt(root: unknown, path: Path, v: unknown): unknown {
  if (path.length === 0) return v;
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let node = copy;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
  node[path.at(-1)!] = v;
  return copy;
}

function deleteAt(root: unknown, path: Path): unknown {
  const copy = structuredClone(root) as Record<string | number, unknown>;
  let node = copy;
  for (const k of path.slice(0, -1)) node = node[k] as Record<string | number, unknown>;
  delete node[path.at(-1)!];
  return copy;
}

/** A value `schema` certainly refuses, or undefined when none is known (the schema takes anything). */
function invalidFor(schema: Schema, pick: number): unknown {
  const candidates: unknown[] = [];
  const types = typesOf(schema);
  if (!types.includes("any")) candidates.push(...WRONG_TYPED.filter((v) => !typeAllowed(schema, v)));
  if (Array.isArray(schema.enum)) candidates.push("not-in-the-enum", "");
  if (types.includes("integer") || types.includes("number")) {
    if (typeof schema.minimum === "number") candidates.push(schema.minimum - 1, -1e308);
    if (typeof schema.exclusiveMinimum === "number") candidates.push(schema.exclusiveMinimum, -1e308);
    if (typeof schema.maximum === "number") candidates.push(schema.maximum + 1, 1e308);
    if (types.includes("integer") && !types.includes("number")) candidates.push(0.5, 1e308);
  }
  if (types.includes("string")) {
    if (typeof schema.maxLength === "number") candidates.push("x".repeat(schema.maxLength + 1));
    if (typeof schema.minLength === "number" && schema.minLength > 0) candidates.push("");
    if (typeof schema.pattern === "string")
      candidates.push(...["../x", "\u0000", "ZZ", " "].filter((v) => !new RegExp(schema.pattern as string).test(v)));
  }
  if (types.includes("array")) {
    if (typeof schema.maxItems === "number" && schema.maxItems < 2000)
      candidates.push(Array.from({ length: schema.maxItems + 1 }, () => null));
    if (typeof schema.minItems === "number" && schema.minItems > 0) candidates.push([]);
  }
  return candidates.length ? candidates[pick % candidates.length] : undefined;
}

/**
 * A value of the same form as `known` that names nothing: digits become a large number, otherwise
 * the last alphanumeric character changes (a ULID stays a ULID, a lease id a lease id).
 */
export function absentLike(known: string): string {
  if (/^\d+$/.test(known)) return "999999";
  if (/^\d+\.\w+$/.test(known)) return known.replace(/^\d+/, "999999");
  const dot = known.lastIndexOf(".");
  if (/\.(json|bin)$/.test(known)) return `${known.slice(0, dot)}-absent${known.slice(dot)}`;
  // A ULID's tail is a counter (ids made in one millisecond differ there): change its first random character instead.
  const i = /^[0-9A-HJKMNP-TV-Z]{26}$/.test(known) ? 10 : known.search(/[A-Za-z0-9][^A-Za-z0-9]*$/);
  if (i < 0) return ABSENT_ID;
  const c = known[i]!;
  const hex = /^[0-9a-f]+$/.test(known);
  const swap = /\d/.test(c)
    ? c === "9"
      ? "8"
      : "9"
    : hex
      ? c === "f"
        ? "e"
        : "f"
      : c === "Z"
        ? "Y"
        : c === "z"
          ? "y"
          : /[A-Z]/.test(c)
            ? "Z"
            : "z";
  return known.slice(0, i) + swap + known.slice(i + 1);
}

/** The param's known values (fixture), else a valid generated one. */
function paramArb(op: Operation, name: string, schema: Schema, fixture: Fixture, components: Components): fc.Arbitrary<string> {
  const collection = op.path.split("/")[op.path.startsWith("/ws/") ? 3 : 2];
  const known = fixture.params[`${collection}.${name}`] ?? fixture.params[name];
  if (known?.length) return fc.constantFrom(...known);
  return valueOf(schema, components).map(String);
}

interface Built {
  params: Record<string, string>;
  query: Record<string, string>;
  headers: Record<string, string>;
  body: unknown;
}

const encodePath = (template: string, values: Record<string, string>, raw: Set<string> = new Set()) =>
  template.replace(/\{(\w+)\}/g, (_, k: string) => (raw.has(k) ? values[k]! : encodeURIComponent(values[k] ?? ABSENT_ID)));

const queryString = (q: Record<string, string>) => {
  const s = new URLSearchParams(q).toString();
  return s ? `?${s}` : "";
};

/** A valid request of `op`: fixture ids in the path, schema-valid query, headers and body. */
function validParts(op: Operation, fixture: Fixture, components: Components, named: Named): fc.Arbitrary<Built> {
  const path = Object.fromEntries(
    op.params.filter((p) => p.in === "path").map((p) => [p.name, paramArb(op, p.name, p.schema, fixture, components)]),
  );
  const optional = (p: { required: boolean; schema: Schema }) => valueOf(p.schema, components).map(String);
  // A page token is opaque and only the server makes valid ones: the valid form starts at page one.
  const query = op.params.filter((p) => p.in === "query" && p.name !== "page_token");
  const headers = op.params.filter((p) => p.in === "header" && !["content-range", "authorization"].includes(p.name.toLowerCase()));
  const body =
    op.body && op.body.mediaType.includes("json") ? valueOf(op.body.schema, components, named) : fc.uint8Array({ maxLength: 64 });
  return fc.record({
    params: fc.record(path),
    query: fc.record(Object.fromEntries(query.map((p) => [p.name, optional(p)])), {
      requiredKeys: query.filter((p) => p.required).map((p) => p.name),
    }),
    headers: fc.record(Object.fromEntries(headers.map((p) => [p.name, optional(p)])), {
      requiredKeys: headers.filter((p) => p.required).map((p) => p.name),
    }),
    body,
  }) as fc.Arbitrary<Built>;
}

function assemble(
  op: Operation,
  b: Built,
  mutation: string,
  expect: Expectation,
  over: Partial<FuzzRequest> = {},
  rawParams?: Set<string>,
): FuzzRequest {
  const headers: Record<string, string> = { ...b.headers };
  let body: string | Uint8Array | undefined;
  if (op.body) {
    if (b.body instanceof Uint8Array) {
      body = b.body;
      headers["content-type"] = op.body.mediaType;
      if (op.path === "/v1/uploads/{uid}")
        headers["content-range"] = b.body.length ? `bytes 0-${b.body.length - 1}/${b.body.length}` : "bytes 0-0/1";
    } else {
      body = JSON.stringify(b.body === undefined ? {} : b.body);
      headers["content-type"] = "application/json";
    }
  }
  return {
    op,
    mutation,
    method: op.method,
    target: encodePath(op.path, b.params, rawParams) + queryString(b.query),
    headers,
    body,
    expect,
    ...over,
  };
}

/** Whether the request would destroy fixture rows the rest of the run relies on. */
const destroysFixture = (op: Operation) => op.method === "DELETE";

/** One request of `op`: valid, or one of the mutations that apply to it. */
export function requestOf(op: Operation, all: Operation[], fixture: Fixture, components: Components): fc.Arbitrary<FuzzRequest> {
  const named: Named = Object.fromEntries(Object.entries(fixture.named).map(([k, v]) => [k, fc.constantFrom(...v)]));
  const parts = validParts(op, fixture, components, named);
  const pathParams = op.params.filter((p) => p.in === "path");
  const queryParams = op.params.filter((p) => p.in === "query");
  const jsonBody = op.body?.mediaType.includes("json") ? op.body : null;
  const kinds: [string, number][] = [
    ["valid", 2],
    ["header.huge", 1],
    ["method.wrong", 1],
    ["auth.missing", 1],
  ];
  if (pathParams.length) kinds.push(["path.absent", 2], ["path.hostile", 3]);
  if (queryParams.length) kinds.push(["query.invalid", 2], ["query.extra", 1]);
  if (jsonBody)
    kinds.push(
      ["body.invalid_value", 5],
      ["body.missing_field", 2],
      ["body.extra_fields", 2],
      ["body.hostile_string", 3],
      ["body.deep", 1],
      ["body.not_object", 1],
      ["body.malformed_json", 2],
      ["body.oversize", 1],
      ["body.wrong_content_type", 2],
      ["body.huge_number_text", 1],
    );
  if (op.path === "/v1/uploads/{uid}" && op.method === "PATCH") kinds.push(["upload.bad_content_range", 4], ["upload.truncated", 3]);
  const kind = fc.constantFrom(...kinds.flatMap(([k, w]) => Array<string>(w).fill(k)));
  const taken = methodsAt(all, op.path);
  return fc.tuple(kind, parts, fc.nat(), fc.nat()).map(([k, b, n, m]) => mutate(op, taken, k, b, n, m, components));
}

function mutate(op: Operation, taken: string[], kind: string, b: Built, n: number, m: number, components: Components): FuzzRequest {
  const pathParams = op.params.filter((p) => p.in === "path");
  // DELETEs of real rows would empty the fixture: their valid form targets an absent row.
  if (destroysFixture(op)) for (const p of pathParams) b.params[p.name] = ABSENT_ID;
  switch (kind) {
    case "valid":
      return assemble(op, b, kind, ANY);
    case "header.huge":
      return assemble(op, b, kind, ANY, {
        headers: { ...assemble(op, b, kind, ANY).headers, "x-fuzz-padding": "a".repeat(16_000 + (n % 48_000)) },
      });
    case "method.wrong": {
      const other = ["GET", "POST", "PUT", "PATCH", "DELETE"].filter((x) => !taken.includes(x));
      if (!other.length) return assemble(op, b, "valid", ANY);
      // On a custom method's path (`.../{id}:verb`) the wrong method may reach the resource's own route, whose id refuses the suffix (422).
      return {
        ...assemble(op, b, kind, op.path.includes("}:") ? status(404, 405, 422) : status(405)),
        op: null,
        method: other[n % other.length]!,
      };
    }
    case "auth.missing":
      return assemble(op, b, kind, ANY, {
        apiKeyMode: true,
        headers: {
          ...assemble(op, b, kind, ANY).headers,
          ...(n % 2 ? { authorization: ["Bearer", "Bearer sfm_x", `Bearer sfm_${ABSENT_ID}_nope`, "Basic Zm9vOmJhcg=="][m % 4]! } : {}),
        },
      });
    case "path.absent": {
      // A well-formed name of no row: 404, never 422 or 5xx (a parameter with a fixed set of values has no such name).
      const p = pathParams[n % pathParams.length]!;
      const closed = Array.isArray(resolve(p.schema, components).enum);
      // (The WebSocket route asks for the upgrade first: 426 without one. A body is validated before
      // the row is looked up, and its schema in the document may not say every rule: 422 then.)
      const absent = closed ? REJECT : op.path.startsWith("/ws/") ? status(404, 426) : op.body ? status(404, 422) : status(404);
      return assemble(
        op,
        { ...b, params: { ...b.params, [p.name]: absentLike(b.params[p.name] ?? ABSENT_ID) } },
        `${kind}:${p.name}`,
        absent,
      );
    }
    case "path.hostile": {
      const p = pathParams[n % pathParams.length]!;
      const v = HOSTILE_SEGMENTS[m % HOSTILE_SEGMENTS.length]!;
      const req = assemble(op, { ...b, params: { ...b.params, [p.name]: v } }, `${kind}:${p.name}`, REJECT, {}, new Set([p.name]));
      // Dot segments are resolved by the client's URL parser: the service is asked for another path, which may exist.
      const sent = new URL(req.target, "http://x").pathname;
      return sent === req.target.split("?")[0] ? req : { ...req, op: null, expect: ANY };
    }
    case "query.invalid": {
      const params = op.params.filter((p) => p.in === "query");
      const p = params[n % params.length]!;
      const s = resolve(p.schema, components);
      const bad = invalidFor(s, m);
      const value =
        bad === undefined ? HOSTILE_STRINGS[m % HOSTILE_STRINGS.length]! : typeof bad === "object" ? JSON.stringify(bad) : String(bad);
      // A string query parameter takes any string: only a value its schema refuses must be refused.
      const refusable = bad !== undefined && !(typesOf(s).includes("string") && typeof bad !== "string");
      return assemble(op, { ...b, query: { ...b.query, [p.name]: value } }, `${kind}:${p.name}`, refusable ? REJECT : ANY);
    }
    case "query.extra":
      return assemble(
        op,
        {
          ...b,
          query: {
            ...b.query,
            [`x${n % 7}`]: HOSTILE_STRINGS[m % HOSTILE_STRINGS.length]!.slice(0, 2000),
            page_size: b.query.page_size ?? "1",
          },
        },
        kind,
        ANY,
      );
    case "upload.bad_content_range": {
      const len = b.body instanceof Uint8Array ? b.body.length : 0;
      const ranges = [
        undefined,
        "",
        "bytes=0-3/4",
        "bytes 5-2/10",
        `bytes 0-${len}/${len}`,
        "bytes -1-3/4",
        "bytes 0-3/*x",
        "bytes 0-99999999999999999/99999999999999999",
        "bits 0-3/4",
        `bytes 0-${Math.max(len - 1, 0)}/${len + 1_000_000_000}`,
        "bytes 0-0/0",
        "bytes NaN-NaN/NaN",
      ];
      const r = ranges[n % ranges.length];
      const base = assemble(op, b, kind, REJECT);
      const headers = { ...base.headers };
      if (r === undefined) delete headers["content-range"];
      else headers["content-range"] = r;
      return { ...base, mutation: `${kind}:${JSON.stringify(r)}`, headers };
    }
    case "upload.truncated": {
      const body = b.body instanceof Uint8Array && b.body.length > 1 ? b.body : new Uint8Array(8);
      const base = assemble(op, { ...b, body }, kind, status(422));
      return { ...base, body: body.subarray(0, n % body.length) };
    }
  }
  return bodyMutation(op, kind, b, n, m, components);
}

function bodyMutation(op: Operation, kind: string, b: Built, n: number, m: number, components: Components): FuzzRequest {
  const schema = op.body!.schema;
  const json = (value: unknown, mutation: string, expect: Expectation) => ({ ...assemble(op, { ...b, body: value }, mutation, expect) });
  const raw = (text: string, mutation: string, expect: Expectation, contentType = "application/json") => {
    const base = assemble(op, b, mutation, expect);
    return { ...base, body: text, headers: { ...base.headers, "content-type": contentType } };
  };
  const spots = locations(b.body, schema, components);
  switch (kind) {
    case "body.invalid_value": {
      const candidates = spots.filter((s) => invalidFor(s.schema, 0) !== undefined);
      if (!candidates.length) return json(b.body, "valid", ANY);
      const spot = candidates[n % candidates.length]!;
      const bad = invalidFor(spot.schema, m);
      return json(setAt(b.body, spot.path, bad), `${kind}:${spot.path.join(".") || "(root)"}=${short(bad)}`, REJECT);
    }
    case "body.missing_field": {
      const withRequired = spots.filter(
        (s) =>
          Array.isArray(s.schema.required) && s.schema.required.length && s.value && typeof s.value === "object" && !Array.isArray(s.value),
      );
      if (!withRequired.length) return json(b.body, "valid", ANY);
      const spot = withRequired[n % withRequired.length]!;
      const required = spot.schema.required as string[];
      const key = required[m % required.length]!;
      const hasDefault = "default" in resolve(((spot.schema.properties ?? {}) as Record<string, Schema>)[key] ?? {}, components);
      return json(deleteAt(b.body, [...spot.path, key]), `${kind}:${[...spot.path, key].join(".")}`, hasDefault ? ANY : REJECT);
    }
    case "body.extra_fields": {
      const objects = spots.filter((s) => s.value && typeof s.value === "object" && !Array.isArray(s.value));
      if (!objects.length) return json(b.body, "valid", ANY);
      const spot = objects[n % objects.length]!;
      const extra = [
        { "x-fuzz": HOSTILE_STRINGS[m % HOSTILE_STRINGS.length] },
        { tenant_id: "someone-else" },
        JSON.parse('{"__proto__": {"polluted": true}}'),
        { constructor: { prototype: { polluted: true } } },
        { ["k".repeat(5000)]: 1 },
      ][m % 5];
      return json(setAt(b.body, spot.path, { ...(spot.value as object), ...extra }), `${kind}:${spot.path.join(".") || "(root)"}`, ANY);
    }
    case "body.hostile_string": {
      const strings = spots.filter((s) => typeof s.value === "string");
      if (!strings.length) return json(b.body, "valid", ANY);
      const spot = strings[n % strings.length]!;
      const v = HOSTILE_STRINGS[m % HOSTILE_STRINGS.length]!;
      return json(setAt(b.body, spot.path, v), `${kind}:${spot.path.join(".")}=${short(v)}`, ANY);
    }
    case "body.deep": {
      const depth = [100, 1000, 10_000, 100_000][n % 4]!;
      const nest = m % 2 ? "[".repeat(depth) + "]".repeat(depth) : '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
      const spot = spots[m % Math.max(spots.length, 1)];
      const marker = "\u0001DEEP\u0001";
      const text = JSON.stringify(spot ? setAt(b.body, spot.path, marker) : marker).replace(JSON.stringify(marker), nest);
      return raw(text, `${kind}:${depth}@${spot?.path.join(".") ?? "(root)"}`, ANY);
    }
    case "body.not_object": {
      const v = ["[]", "null", "1", '"x"', "true", "[{}]", '""'][n % 7]!;
      return raw(v, `${kind}:${v}`, jsonType(JSON.parse(v)) === "object" ? ANY : REJECT);
    }
    case "body.malformed_json": {
      const text = JSON.stringify(b.body === undefined ? {} : b.body);
      const v = [
        text.slice(0, Math.max(1, text.length - 1)),
        "{",
        "{'a': 1}",
        '{"a":}',
        "\u0000",
        "",
        '{"a": 1,}',
        text + "}",
        "NaN",
        '{"a": 01}',
      ][n % 10]!;
      // 400; or 422 when another part of the request (a query the document under-describes) is refused first.
      return raw(v, `${kind}:${short(v)}`, v === "" ? REJECT : status(400, 422));
    }
    case "body.oversize": {
      const size = 1024 * 1024 + 1 + (n % 1024);
      const pad = JSON.stringify({ ...(b.body && typeof b.body === "object" && !Array.isArray(b.body) ? b.body : {}), "x-pad": "" });
      return raw(pad.replace('"x-pad":""', `"x-pad":"${"a".repeat(size)}"`), `${kind}:${size}`, status(413));
    }
    case "body.wrong_content_type": {
      const type = [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/xml",
        "",
        "application/json; charset=utf-16",
        "image/jpeg",
      ][n % 7]!;
      // The JSON in another media type: refused (400, 415, 422), or read as JSON when the type says JSON.
      return raw(
        JSON.stringify(b.body === undefined ? {} : b.body),
        `${kind}:${type}`,
        type.startsWith("application/json") ? ANY : REJECT,
        type,
      );
    }
    case "body.huge_number_text": {
      const numbers = spots.filter((s) => typeof s.value === "number");
      if (!numbers.length) return json(b.body, "valid", ANY);
      const spot = numbers[n % numbers.length]!;
      const literal = ["1e999", "-1e999", "123456789012345678901234567890", "1.0e+400", "-0", "0.0000000000000000000000001"][m % 6]!;
      const marker = "\u0001NUM\u0001";
      const text = JSON.stringify(setAt(b.body, spot.path, marker)).replace(JSON.stringify(marker), literal);
      return raw(text, `${kind}:${spot.path.join(".")}=${literal}`, ANY);
    }
  }
  return json(b.body, "valid", ANY);
}

function short(v: unknown): string {
  const s = typeof v === "string" ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  return s.length > 40 ? `${s.slice(0, 37)}...(${s.length})` : s;
}

/** Requests to paths no operation has. */
export function strayRequest(): fc.Arbitrary<FuzzRequest> {
  return fc
    .tuple(
      fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE"),
      fc.constantFrom(
        "/v1/nope",
        "/v1/projects/x/y/z/w",
        "/v2/projects",
        "/v1/projects:launch",
        "/v1//projects",
        "/v1/jobs/x:explode",
        "/ws/v1/nope",
      ),
      fc.constantFrom(...HOSTILE_SEGMENTS),
    )
    .map(([method, path, seg]) => ({
      op: null,
      mutation: "path.unknown",
      method,
      target: `${path}/${seg}`,
      headers: {},
      expect: status(400, 404, 405),
    }));
}
