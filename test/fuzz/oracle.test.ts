/**
 * The fuzz oracle on hand-made answers: a request without a valid key must be refused with 401,
 * except by an operation that takes no key by design (the 10,000-request run of seed 22 reported
 * POST /v1/runner-tokens' 403, the operator's refusal of keyless volunteers, as a fault).
 */
import { expect, it } from "vitest";
import { judge } from "./oracle";
import type { FuzzRequest } from "./requests";

const problem = (status: number) => ({
  status,
  contentType: "application/problem+json",
  body: JSON.stringify({ type: "http://x/errors/forbidden", title: "t", status, instance: "/v1/x" }),
});

const keyMissing = (method: string, path: string): FuzzRequest => ({
  op: { method, path, statuses: new Set([200, 201, 401, 403, 404]) } as unknown as FuzzRequest["op"],
  mutation: "auth.missing",
  method,
  target: path,
  headers: { authorization: "Bearer" },
  expect: { kind: "any" },
  apiKeyMode: true,
});

it("asks a keyed route for 401 without a key, and lets the keyless volunteer-token route answer as the operator set it", () => {
  expect(judge(keyMissing("POST", "/v1/projects"), problem(403))?.fault).toMatch(/expected 401/);
  expect(judge(keyMissing("POST", "/v1/projects"), problem(401))).toBeNull();
  expect(judge(keyMissing("POST", "/v1/runner-tokens"), problem(403))).toBeNull();
  expect(judge(keyMissing("POST", "/v1/runner-tokens"), { status: 201, contentType: "application/json", body: "{}" })).toBeNull();
});
