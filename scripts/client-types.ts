/**
 * @module `npm run client:types`: regenerates the client's types (client/schema.ts) from the
 * `/openapi.json` of the local stack, so they say what the routes say. Run it after changing a
 * route; `client/schema.test.ts` fails while the committed file differs from what this writes.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import openapiTS, { COMMENT_HEADER, astToString } from "openapi-typescript";
import ts from "typescript";
import { startLocalStack } from "./local-stack";

export const SCHEMA_FILE = fileURLToPath(new URL("../client/schema.ts", import.meta.url));

const HEADER = `${COMMENT_HEADER.trimEnd()}
// Generated from the service's /openapi.json by \`npm run client:types\`; client/schema.test.ts checks it is current.

`;

/**
 * The TypeScript of an OpenAPI document: `paths` and `components`, as openapi-fetch takes them.
 * The document lists a field with a default as optional (what a request may leave out), while
 * every answer carries it: the top-level types make such fields required (answers), and the same
 * types in namespace `input` leave them optional (request bodies; api.ts joins the two). Binary
 * bodies (`format: binary`) are bytes, as fetch sends them, not the generator's default `string`.
 */
const BYTES = ts.factory.createUnionTypeNode(["Blob", "Uint8Array"].map((name) => ts.factory.createTypeReferenceNode(name)));

export async function clientTypesOf(doc: object): Promise<string> {
  const types = async (defaultNonNullable: boolean) =>
    astToString(
      await openapiTS(structuredClone(doc) as Parameters<typeof openapiTS>[0], {
        silent: true,
        defaultNonNullable,
        transform: (schema) => (schema.format === "binary" ? BYTES : undefined),
      }),
    );
  const input = (await types(false)).trimEnd().replace(/^(?=.)/gm, "    ");
  return `${HEADER}${await types(true)}
/** The same types as the service takes them in requests: a field with a default may be left out. */
export namespace input {
${input}
}
`;
}

/** The local stack's OpenAPI document, as served. */
export async function liveOpenapiDocument(): Promise<object> {
  const stack = await startLocalStack();
  try {
    const res = await fetch(`${stack.base}/openapi.json`);
    if (!res.ok) throw new Error(`/openapi.json answered ${res.status}`);
    return (await res.json()) as object;
  } finally {
    await stack.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(SCHEMA_FILE, await clientTypesOf(await liveOpenapiDocument()));
  console.log(`wrote ${SCHEMA_FILE}`);
}
