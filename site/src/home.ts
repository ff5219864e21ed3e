/** The landing page: shows what this server can do, from its own API. */
const status = document.getElementById("status")!;

function row(term: string, value: string) {
  const dt = document.createElement("dt");
  dt.textContent = term;
  const dd = document.createElement("dd");
  dd.textContent = value;
  status.append(dt, dd);
}

async function main() {
  status.replaceChildren();
  try {
    const [version, caps] = await Promise.all([
      fetch("/version").then((r) => r.json()),
      fetch("/v1/capabilities").then((r) => r.json()),
    ]);
    row("Service", `${version.service}`);
    row("Backend", `${caps.backend.name} ${caps.backend.version}`);
    const on = Object.entries(caps.features as Record<string, boolean>).filter(([, v]) => v).map(([k]) => k);
    row("Capabilities", on.join(", "));
  } catch (e) {
    row("API", `unreachable: ${e instanceof Error ? e.message : String(e)}`);
  }
}
void main();
