/** @module Health and meta responses (spec 1.2, 4.1, 4.17 keys). */
import { z } from "zod";
import { Id, Timestamp } from "./common";

export const Health = z.object({ status: z.literal("ok") }).meta({ id: "HealthResponse" });
export const Readyz = z
  .object({
    status: z.enum(["ok", "unavailable"]),
    checks: z.record(z.string(), z.object({ status: z.enum(["ok", "fail"]), detail: z.string().optional() })),
  })
  .meta({ id: "ReadyzResponse" });

export const BackendIdentity = z.object({ name: z.string(), version: z.string(), vendor: z.string() });
export const Version = z
  .object({
    service: z.string(),
    backend: BackendIdentity.extend({
      runtime_versions: z
        .record(z.string(), z.string())
        .describe(
          "the builds runners must run: `engine-wasm` and `shaders` (SHA-256 of their bytes), `unbuilt` when the deployment set none",
        ),
    }).nullable(),
    "x-runner_protocol": z.string().describe("the version of the runner protocol (worker/routes/runners.md) this service speaks"),
  })
  .meta({ id: "VersionResponse" });
export const Spec = z.object({ spec_version: z.string(), spec_url: z.string().nullable() }).meta({ id: "SpecResponse" });
export const Capabilities = z
  .object({ backend: BackendIdentity, features: z.record(z.string(), z.boolean()) })
  .meta({ id: "Capabilities" });

export const CameraModel = z
  .object({
    model_id: z.number().int(),
    name: z.string(),
    num_params: z.number().int(),
    params: z.array(z.string()),
    focal_length_idxs: z.array(z.number().int()),
    principal_point_idxs: z.array(z.number().int()),
    extra_params_idxs: z.array(z.number().int()),
  })
  .meta({ id: "CameraModelOut" });

export const ApiKeyIssue = z
  .object({
    tenant_id: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z0-9_-]+$/),
    name: z.string().max(256).optional(),
  })
  .meta({ id: "IssueKeyRequest" });
export const ApiKey = z
  .object({
    api_key_id: Id,
    tenant_id: z.string(),
    name: z.string().nullable(),
    raw_key: z.string().nullable().describe("only in the response that issued the key"),
    created_at: Timestamp,
    revoked_at: Timestamp.nullable(),
  })
  .meta({ id: "ApiKeyOut" });
export type ApiKey = z.infer<typeof ApiKey>;
