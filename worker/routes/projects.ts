/**
 * @module Projects (spec 2.2, 4.2): CRUD with update masks; delete cascades to datasets and
 * images and releases their blob references.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { Id, Page, PageQuery, Project, ProjectCreate, ProjectPatch, UpdateMaskQuery } from "../../protocol";
import { notFound } from "../errors";
import { json, jsonBody, problemResponses } from "../openapi";
import { newRouter } from "../router";
import { applyUpdateMask } from "../services/update-mask";
import { projectResource } from "../services/resources";
import { jobStore, tenantStore, unwrap } from "../services/stores";

export const projects = newRouter();

const ProjectPage = Page(Project, "ProjectPage");
const PathParams = z.object({ pid: Id });

projects.openapi(
  createRoute({
    method: "post",
    path: "/v1/projects",
    tags: ["projects"],
    request: jsonBody(ProjectCreate),
    responses: { 201: json(Project, "created"), ...problemResponses(400, 401, 413, 422) },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const row = await tenantStore(c.env, c.var.tenantId).createProject({
      name: body.name,
      description: body.description ?? null,
      pool_opt_in: body["x-pool_opt_in"] ?? false,
    });
    return c.json(projectResource(row, c.var.tenantId), 201, { Location: `/v1/projects/${row.project_id}` });
  },
);

projects.openapi(
  createRoute({
    method: "get",
    path: "/v1/projects",
    tags: ["projects"],
    request: { query: PageQuery },
    responses: { 200: json(ProjectPage, "the caller's projects"), ...problemResponses(401, 422) },
  }),
  async (c) => {
    const page = await tenantStore(c.env, c.var.tenantId).listProjects(c.req.valid("query"));
    return c.json({ ...page, items: page.items.map((r) => projectResource(r, c.var.tenantId)) }, 200);
  },
);

projects.openapi(
  createRoute({
    method: "get",
    path: "/v1/projects/{pid}",
    tags: ["projects"],
    request: { params: PathParams },
    responses: { 200: json(Project, "the project"), ...problemResponses(401, 404) },
  }),
  async (c) => {
    const row = await tenantStore(c.env, c.var.tenantId).getProject(c.req.valid("param").pid);
    if (!row) throw notFound("project");
    return c.json(projectResource(row, c.var.tenantId), 200);
  },
);

projects.openapi(
  createRoute({
    method: "patch",
    path: "/v1/projects/{pid}",
    tags: ["projects"],
    request: { params: PathParams, query: UpdateMaskQuery, ...jsonBody(ProjectPatch) },
    responses: { 200: json(Project, "the updated project"), ...problemResponses(400, 401, 404, 413, 422) },
  }),
  async (c) => {
    const patch = applyUpdateMask(c.req.valid("json"), c.req.valid("query").update_mask, ["name", "description", "x-pool_opt_in"]);
    const row = await tenantStore(c.env, c.var.tenantId).patchProject(c.req.valid("param").pid, patch);
    if (!row) throw notFound("project");
    return c.json(projectResource(row, c.var.tenantId), 200);
  },
);

projects.openapi(
  createRoute({
    method: "delete",
    path: "/v1/projects/{pid}",
    tags: ["projects"],
    request: { params: PathParams },
    responses: { 204: { description: "deleted, with its datasets, images, reconstructions and jobs" }, ...problemResponses(401, 404, 409) },
  }),
  async (c) => {
    const { job_ids } = unwrap(await tenantStore(c.env, c.var.tenantId).deleteProject(c.req.valid("param").pid));
    await Promise.all(job_ids.map((j) => jobStore(c.env, c.var.tenantId, j).purge()));
    return c.body(null, 204);
  },
);
