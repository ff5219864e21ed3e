/**
 * @module Valid values of an OpenAPI 3.1 schema (the JSON Schema subset zod-openapi emits: $ref,
 * type (also as a list), enum, const, oneOf/anyOf, properties/required/additionalProperties,
 * items/prefixItems/min-maxItems, min-max(Length), exclusiveMinimum, pattern), as fast-check
 * arbitraries. Sizes stay small: the fuzzer wants many requests, not big ones (it makes big ones
 * on purpose, as mutations).
 */
import fc from "fast-check";

export type Schema = Record<string, unknown>;

/** The document's `components.schemas`, for `$ref`s. */
export type Components = Record<string, Schema>;

const MAX_DEPTH = 6;

export function resolve(schema: Schema, components: Components): Schema {
  const ref = schema.$ref;
  if (typeof ref !== "string") return schema;
  const name = ref.replace("#/components/schemas/", "");
  const target = components[name];
  if (!target) throw new Error(`unresolved $ref ${ref}`);
  return resolve(target, components);
}

/** The types a schema allows, `["any"]` when it says nothing. */
export function typesOf(schema: Schema): string[] {
  const t = schema.type;
  if (Array.isArray(t)) return t as string[];
  if (typeof t === "string") return [t];
  if (schema.enum) return [...new Set((schema.enum as unknown[]).map(jsonType))];
  if ("const" in schema) return [jsonType(schema.const)];
  return ["any"];
}

export function jsonType(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

/** Whether `v` has one of the types `schema` allows (integers are numbers too). */
export function typeAllowed(schema: Schema, v: unknown): boolean {
  const allowed = typesOf(schema);
  const t = jsonType(v);
  return allowed.includes("any") || allowed.includes(t) || (t === "integer" && allowed.includes("number"));
}

/** A valid value of `schema`; `named` may supply a value for a property by name (fixture ids). */
export function valueOf(schema: Schema, components: Components, named: Named = {}, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema, components);
  const alternatives = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (alternatives) return fc.oneof(...alternatives.map((a) => valueOf(a, components, named, depth + 1)));
  if ("const" in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  const types = typesOf(s);
  const nonNull = types.filter((t) => t !== "null");
  const pick = nonNull.length > 0 ? nonNull : types;
  const arbs = pick.map((t) => ofType(t, s, components, named, depth));
  if (types.includes("null") && nonNull.length > 0) arbs.push(fc.constant(null));
  return arbs.length === 1 ? arbs[0]! : fc.oneof(...arbs);
}

/** Values for properties by name, e.g. `dataset_id` -> the fixture's dataset (mixed with generated ones). */
export type Named = Record<string, fc.Arbitrary<unknown>>;

function ofType(type: string, s: Schema, components: Components, named: Named, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case "string":
      return stringOf(s);
    case "integer": {
      const min = (s.minimum as number | undefined) ?? (s.exclusiveMinimum !== undefined ? (s.exclusiveMinimum as number) + 1 : -1000);
      const max = (s.maximum as number | undefined) ?? Math.max(min + 1000, 1000);
      return fc.integer({ min: Math.ceil(min), max: Math.floor(max) });
    }
    case "number": {
      const min = (s.minimum as number | undefined) ?? (s.exclusiveMinimum as number | undefined) ?? -1000;
      const max = (s.maximum as number | undefined) ?? Math.max(min + 1000, 1000);
      const open = s.exclusiveMinimum !== undefined;
      return fc.double({ min, max, noNaN: true, noDefaultInfinity: true, minExcluded: open });
    }
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array":
      return arrayOf(s, components, named, depth);
    case "object":
      return objectOf(s, components, named, depth);
    default:
      return fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean(), fc.constant(null));
  }
}

function stringOf(s: Schema): fc.Arbitrary<string> {
  const minLength = (s.minLength as number | undefined) ?? 0;
  const maxLength = Math.min((s.maxLength as number | undefined) ?? 24, Math.max(minLength, 24));
  if (typeof s.pattern === "string") {
    return fc
      .stringMatching(new RegExp(s.pattern), { size: "small" })
      .filter((v) => v.length >= minLength && v.length <= ((s.maxLength as number | undefined) ?? Infinity));
  }
  if (s.format === "date-time") return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
  return fc.string({ minLength, maxLength });
}

function arrayOf(s: Schema, components: Components, named: Named, depth: number): fc.Arbitrary<unknown[]> {
  if (Array.isArray(s.prefixItems)) return fc.tuple(...(s.prefixItems as Schema[]).map((p) => valueOf(p, components, named, depth + 1)));
  const minLength = (s.minItems as number | undefined) ?? 0;
  if (depth >= MAX_DEPTH || !s.items)
    return minLength === 0 ? fc.constant([]) : fc.array(fc.constant(null), { minLength, maxLength: minLength });
  const maxLength = Math.min((s.maxItems as number | undefined) ?? 4, Math.max(minLength, 4));
  return fc.array(valueOf(s.items as Schema, components, named, depth + 1), { minLength, maxLength });
}

function objectOf(s: Schema, components: Components, named: Named, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const props = (s.properties ?? {}) as Record<string, Schema>;
  const required = new Set((s.required ?? []) as string[]);
  if (depth >= MAX_DEPTH) {
    // Deep enough: the required properties only, at their simplest.
    return fc.record(Object.fromEntries([...required].map((k) => [k, valueOf(props[k] ?? {}, components, named, MAX_DEPTH)])));
  }
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [k, p] of Object.entries(props)) {
    const own = valueOf(p, components, named, depth + 1);
    model[k] = named[k] ? fc.oneof({ arbitrary: named[k]!, weight: 3 }, { arbitrary: own, weight: 1 }) : own;
  }
  const known = fc.record(model, { requiredKeys: [...required].filter((k) => k in model) });
  const extra = s.additionalProperties;
  if (!extra || Object.keys(props).length > 0) return known;
  // A map (`additionalProperties` only): a few entries of the value schema.
  const value =
    extra === true || Object.keys(extra as Schema).length === 0
      ? fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.boolean())
      : valueOf(extra as Schema, components, named, depth + 1);
  return fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), value, { maxKeys: 3 });
}
