/** @module Project resource (spec 2.2, 4.2). */
import { z } from "zod";
import { Id, Links, Timestamp } from "./common";

const Name = z.string().trim().min(1).max(256);
const Description = z.string().max(4096).nullable();

export const Project = z
  .object({
    project_id: Id,
    tenant_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    created_at: Timestamp,
    "x-pool_opt_in": z.boolean().describe("whether volunteer (pool) runners may compute this project's jobs"),
    _links: Links,
  })
  .meta({ id: "Project" });
export type Project = z.infer<typeof Project>;

export const ProjectCreate = z
  .object({ name: Name, description: Description.optional(), "x-pool_opt_in": z.boolean().optional() })
  .meta({ id: "ProjectCreate" });
export const ProjectPatch = z
  .object({ name: Name.optional(), description: Description.optional(), "x-pool_opt_in": z.boolean().optional() })
  .meta({ id: "ProjectPatch" });
export type ProjectPatch = z.infer<typeof ProjectPatch>;
