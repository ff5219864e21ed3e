/** @module `/errors/{slug}`: the pages the problem `type` URIs point at (spec 7). */
import { createRoute, z } from "@hono/zod-openapi";
import { TITLES, type ErrorSlug, notFound } from "../errors";
import { newRouter } from "../router";

export const errorPages = newRouter();

errorPages.openapi(
  createRoute({
    method: "get",
    path: "/errors/{slug}",
    tags: ["meta"],
    request: { params: z.object({ slug: z.string().max(64) }) },
    responses: {
      200: {
        content: { "application/json": { schema: z.object({ slug: z.string(), title: z.string() }) } },
        description: "what an error class means",
      },
    },
  }),
  (c) => {
    const { slug } = c.req.valid("param");
    if (!(slug in TITLES)) throw notFound("error class");
    return c.json({ slug, title: TITLES[slug as ErrorSlug] }, 200);
  },
);
