/**
 * @module The web demo's static files (site/dist), served on the API's origin. Pages get
 * cross-origin isolation (COOP same-origin + COEP require-corp) so the runner's WebAssembly
 * threads can use SharedArrayBuffer; every asset gets CORP same-origin to load under COEP.
 */

/** API and event routes never fall through to files. */
export const isSitePath = (path: string) => !/^\/(v1|ws)(\/|$)/.test(path);

export async function serveSiteAsset(env: Env, req: Request): Promise<Response | null> {
  const res = await env.ASSETS.fetch(req);
  if (res.status === 404) return null;
  const out = new Response(res.body, res);
  out.headers.set("Cross-Origin-Opener-Policy", "same-origin");
  out.headers.set("Cross-Origin-Embedder-Policy", "require-corp");
  out.headers.set("Cross-Origin-Resource-Policy", "same-origin");
  return out;
}
