// comlink ships its Node adapter's types as node-adapter.d.ts beside node-adapter.mjs, which
// TypeScript does not pair with an .mjs import: this pairs them.
declare module "comlink/dist/esm/node-adapter.mjs" {
  export { default } from "comlink/dist/esm/node-adapter";
}
