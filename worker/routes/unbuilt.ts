/**
 * @module The spec's capability-flagged routes that this deployment does not build yet (1.1, 7):
 * each answers 501 problem+json carrying its `capability`, never 404, and is documented in
 * /openapi.json with the request shape the spec gives and that 501. One row per route; whoever
 * builds a route removes its row in the same commit (and defines its schemas in protocol/).
 * Reference-only routes (`/v1/backend*`, `/v1/admin/plugins*`, `/v1/admin/routing*`) carry no
 * capability, so they are absent until built rather than listed here.
 */
import { type RouteConfig, createRoute, z } from "@hono/zod-openapi";
import { type OptionalCapability, Id } from "../../protocol";
import type { AppEnv } from "../context";
import { capabilityUnavailable } from "../errors";
import { jsonBody, problemResponses } from "../openapi";
import { createActionRoute, newRouter } from "../router";
import { requireCapability } from "../services/capabilities";
import type { Context } from "hono";

/** Where a route names the capability of what is asked (4.13 mesh `method`). */
interface Variant {
  in: "query" | "body";
  field: string;
  capabilities: Record<string, OptionalCapability>;
}

export interface UnbuiltRoute {
  method: "get" | "post" | "put" | "delete";
  /** The spec's path (section 4 notation). */
  path: string;
  /** The capability a request needs when `variant` does not name another. */
  capability: OptionalCapability;
  variant?: Variant;
  summary: string;
  request?: RouteConfig["request"];
}

// Request shapes as far as the spec gives them; fields it leaves open stay open.
const ReconParams = z.object({ rid: Id });
const SnapshotParams = ReconParams.extend({ seq: z.string() });

export const UNBUILT: readonly UnbuiltRoute[] = [
  {
    method: "get",
    path: "/v1/reconstructions/{rid}/snapshots/{seq}/dense/index.json",
    capability: "dense.patch_match_stereo",
    summary: "the dense outputs of a snapshot (4.9 rule 1)",
    request: { params: SnapshotParams },
  },
  {
    method: "get",
    path: "/v1/reconstructions/{rid}/snapshots/{seq}/dense/fused.bin",
    capability: "dense.stereo_fusion",
    summary: "the fused dense point cloud of a snapshot (4.9 rule 1)",
    request: { params: SnapshotParams },
  },
  {
    method: "post",
    path: "/v1/reconstructions/{rid}/mesh",
    capability: "mesh.poisson",
    variant: { in: "body", field: "method", capabilities: { poisson: "mesh.poisson", delaunay: "mesh.delaunay" } },
    summary: "meshes the reconstruction (4.13)",
    request: {
      params: ReconParams,
      ...jsonBody(z.object({ method: z.enum(["poisson", "delaunay"]), options: z.record(z.string(), z.unknown()).optional() })),
    },
  },
  {
    method: "post",
    path: "/v1/reconstructions/{rid}/dense",
    capability: "dense.patch_match_stereo",
    summary: "dense reconstruction (4.13)",
    request: { params: ReconParams },
  },
];

/** The capability a request to `row` needs: the row's, or the one its query or body names. */
async function capabilityOf(c: Context<AppEnv>, row: UnbuiltRoute): Promise<OptionalCapability> {
  const v = row.variant;
  if (!v) return row.capability;
  const named =
    v.in === "query"
      ? c.req.query(v.field)
      : await c.req.json<Record<string, unknown>>().then(
          (b) => b?.[v.field],
          () => undefined,
        );
  return (typeof named === "string" && Object.hasOwn(v.capabilities, named) ? v.capabilities[named] : undefined) ?? row.capability;
}

export const unbuilt = newRouter();

for (const row of UNBUILT) {
  const config = {
    method: row.method,
    path: row.path,
    tags: ["unbuilt"],
    summary: row.summary,
    description: `Not built on this deployment: answers 501 with \`capability\` (1.1) while \`${row.capability}\` is false in /v1/capabilities.`,
    request: row.request,
    // The gate runs before any validation: a client probing with any body learns the capability.
    middleware: [
      async (c: Context<AppEnv>) => {
        const capability = await capabilityOf(c, row);
        requireCapability(c.env, capability);
        // Only a test deployment can switch the flag on (SVC_TEST_CAPABILITIES); the route is still not built.
        throw capabilityUnavailable(capability, `${row.method.toUpperCase()} ${row.path} is not built on this deployment`);
      },
    ],
    responses: problemResponses(501),
  } satisfies RouteConfig;
  unbuilt.openapi(/:[\w-]+$/.test(row.path) ? createActionRoute(config) : createRoute(config), () => {
    throw new Error("unreachable: the gate answers");
  });
}
