/**
 * @module The operations an OpenAPI document declares, in the form the fuzzer generates requests
 * from: method, path template, parameters with their schemas, the request body's media type and
 * schema, and the statuses the document promises.
 */
import type { Schema } from "./schema";

export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  schema: Schema;
}

export interface Operation {
  method: string;
  /** Path template, e.g. `/v1/projects/{pid}`. */
  path: string;
  params: Parameter[];
  body: { mediaType: string; schema: Schema; required: boolean } | null;
  /** The response statuses the document lists (every status, when it has a `default` answer). */
  statuses: { has(status: number): boolean };
}

export interface OpenApiDocument {
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: Parameter[];
        requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
        responses?: Record<string, unknown>;
      }
    >
  >;
  components?: { schemas?: Record<string, Schema> };
}

const METHODS = ["get", "post", "put", "patch", "delete"];

export function operationsOf(doc: OpenApiDocument): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue;
      const content = op.requestBody?.content ?? {};
      const mediaType = Object.keys(content)[0];
      ops.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters ?? []).map((p) => ({ ...p, required: !!p.required })),
        body: mediaType ? { mediaType, schema: content[mediaType]!.schema, required: !!op.requestBody?.required } : null,
        statuses: "default" in (op.responses ?? {}) ? { has: () => true } : new Set(Object.keys(op.responses ?? {}).map(Number)),
      });
    }
  }
  return ops;
}

/** The methods the document declares on a path template. */
export function methodsAt(ops: Operation[], path: string): string[] {
  return ops.filter((o) => o.path === path).map((o) => o.method);
}
