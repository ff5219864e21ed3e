// `npm run runner -- --server URL [--key KEY] [--count N] [--name NAME]`: headless Chromium runners.
// Each is a tab on the server's own runner page (/runner.html), computing in a Web Worker exactly
// as a volunteer's browser would. A tab that crashes or closes is opened again; Ctrl-C stops all.
import { parseArgs } from "node:util";
import type { Page } from "playwright-core";
import { launchChromium } from "../browser-runtime/headless/chromium";

const { values } = parseArgs({
  options: {
    server: { type: "string", default: process.env.EDGESFM_SERVER ?? "http://127.0.0.1:8787" },
    key: { type: "string", default: process.env.EDGESFM_RUNNER_KEY },
    count: { type: "string", default: "1" },
    name: { type: "string", default: "headless" },
  },
});
const server = values.server!.replace(/\/$/, "");
const count = Math.max(1, Number(values.count));

const browser = await launchChromium();
let stopping = false;

async function openRunner(i: number): Promise<void> {
  const page: Page = await browser.context.newPage();
  const name = count > 1 ? `${values.name}-${i + 1}` : values.name!;
  page.on("console", (msg) => console.log(msg.text()));
  page.on("pageerror", (err) => console.error(`[${name}] page error: ${err.message}`));
  const reopen = (why: string) => {
    if (stopping) return;
    console.error(`[${name}] ${why}; reopening`);
    setTimeout(() => void openRunner(i), 2000);
  };
  page.on("crash", () => reopen("page crashed"));
  page.on("close", () => reopen("page closed"));
  const query = new URLSearchParams({ name, ...(values.key ? { key: values.key } : {}) });
  await page.goto(`${server}/runner.html?${query}`).catch((e: Error) => reopen(`could not open: ${e.message}`));
}

for (let i = 0; i < count; i++) await openRunner(i);
console.log(`[runner] ${count} headless runner(s) on ${server}`);

const shutdown = async () => {
  stopping = true;
  await browser.close();
  process.exit(0);
};
process.on("SIGINT", () => void shutdown());
process.on("SIGTERM", () => void shutdown());
