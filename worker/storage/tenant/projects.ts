/** @module Projects (spec 2.2, 4.2); deleting one, which reaches everything it owns, is cascade.ts. */
import type { ProjectPatch } from "../../../protocol";
import { ulid } from "../ids";
import { type PageRequest, type PageResult, first, nowIso, paginate } from "../sql";
import type { ProjectRow } from "../tenant-rows";

const projectOf = (r: Record<string, SqlStorageValue>): ProjectRow => ({
  project_id: r.project_id as string,
  name: r.name as string,
  description: (r.description as string | null) ?? null,
  pool_opt_in: r.pool_opt_in === 1,
  created_at: r.created_at as string,
});

export function create(db: DurableObjectStorage, input: { name: string; description?: string | null; pool_opt_in?: boolean }): ProjectRow {
  const row = {
    project_id: ulid(),
    name: input.name,
    description: input.description ?? null,
    pool_opt_in: input.pool_opt_in ? 1 : 0,
    created_at: nowIso(),
  };
  db.sql.exec(
    "INSERT INTO projects (project_id, name, description, pool_opt_in, created_at) VALUES (?, ?, ?, ?, ?)",
    ...Object.values(row),
  );
  return projectOf(row);
}

export function list(db: DurableObjectStorage, page: PageRequest): PageResult<ProjectRow> {
  return paginate(db.sql, { table: "projects", key: "project_id", where: "1=1", params: [] }, page, projectOf);
}

export function get(db: DurableObjectStorage, projectId: string): ProjectRow | null {
  const r = first(db.sql, "SELECT * FROM projects WHERE project_id = ?", projectId);
  return r ? projectOf(r) : null;
}

export function patch(db: DurableObjectStorage, projectId: string, patch: ProjectPatch): ProjectRow | null {
  const cur = get(db, projectId);
  if (!cur) return null;
  const next = {
    name: patch.name ?? cur.name,
    description: patch.description !== undefined ? patch.description : cur.description,
    pool_opt_in: patch["x-pool_opt_in"] ?? cur.pool_opt_in,
  };
  db.sql.exec(
    "UPDATE projects SET name = ?, description = ?, pool_opt_in = ? WHERE project_id = ?",
    next.name,
    next.description,
    next.pool_opt_in ? 1 : 0,
    projectId,
  );
  return { ...cur, ...next };
}
