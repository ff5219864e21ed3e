// The client's types (schema.ts) are generated from the service's /openapi.json: a route changed
// without `npm run client:types` fails here, with the command to run.
import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { SCHEMA_FILE, clientTypesOf, liveOpenapiDocument } from "../scripts/client-types";

it("client/schema.ts is what the live /openapi.json generates (else run `npm run client:types`)", async () => {
  const generated = await clientTypesOf(await liveOpenapiDocument());
  const committed = readFileSync(SCHEMA_FILE, "utf8");
  if (generated !== committed)
    expect.fail(
      "client/schema.ts differs from the types of the live /openapi.json: run `npm run client:types` and commit client/schema.ts",
    );
});
