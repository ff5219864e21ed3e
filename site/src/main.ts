/**
 * @module The demo page: wires the steps together (photos -> recipe -> live view -> jobs), the
 * API key box, the compute switches, and deep links: `#job=<job_id>` opens a job's live view,
 * `#recon=<recon_id>` shows a reconstruction's newest snapshot (`&seq=<n>` a given one).
 */
import { apiKey, authedObjectUrl, describeError, setApiKey } from "./api/client";
import { getReconstruction, listImages, serverInfo, snapshotSeqs } from "./api/resources";
import { ComputePanel } from "./compute/compute-panel";
import { JobList } from "./jobs/job-list";
import { LiveView } from "./jobs/live-view";
import { RecipeForm } from "./recipe/recipe-form";
import { byId, say } from "./ui/dom";
import { type UploadedSet, PhotoPanel } from "./upload/photo-panel";
import { CameraPanel } from "./viewer/camera-panel";

let current: UploadedSet | null = null;
/** Image ids by name per reconstruction, fetched once, to show photos of jobs from other visits. */
const imageIdsByRecon = new Map<string, Promise<Map<string, string>>>();

async function photoUrl(rid: string, name: string): Promise<string | null> {
  const local = current?.localUrls.get(name);
  if (local) return local;
  let ids = imageIdsByRecon.get(rid);
  if (!ids) {
    ids = getReconstruction(rid)
      .then((r) => listImages(r.dataset_id))
      .then((images) => new Map(images.map((i) => [i.name, i.image_id])));
    imageIdsByRecon.set(rid, ids);
  }
  const id = (await ids.catch(() => new Map<string, string>())).get(name);
  return id ? authedObjectUrl(`/v1/images/${id}/bytes`) : null;
}

// three.js is most of the page's weight: it loads in its own chunk while the rest is usable.
const cameraPanel = new CameraPanel(photoUrl, (i) => void viewerReady.then((v) => v.select(i)));
const viewerReady = import("./viewer/viewer").then(
  ({ Viewer }) =>
    new Viewer(
      byId("viewer"),
      byId("viewer-status"),
      (cameras, rid) => cameraPanel.setCameras(cameras, rid),
      (i) => void cameraPanel.show(i),
    ),
);
const viewer = { load: async (rid: string, seq: number) => (await viewerReady).load(rid, seq) };
const jobs = new JobList((job) => void live.watch(job.job_id, job.recon_id));
/** The server's capabilities (1.2), once it has answered. */
let features: Record<string, boolean> = {};
const live = new LiveView(
  viewer,
  () => void jobs.refresh(),
  () => features,
);
const recipe = new RecipeForm((accepted) => {
  void live.watch(accepted.job_id, accepted.recon_id);
  void jobs.refresh();
});
new PhotoPanel(
  () => recipe.cameraSettings(),
  (set) => {
    current = set;
    recipe.setDataset(set);
  },
);

async function checkServer(): Promise<void> {
  const status = byId("server-status");
  try {
    const { capabilities, openMode } = await serverInfo();
    const on = Object.values(capabilities.features).filter(Boolean).length;
    say(
      status,
      `Connected to ${capabilities.backend.name} ${capabilities.backend.version} (${on} capabilities)${openMode ? ", open mode: no key needed" : ""}.`,
      "ok",
    );
    features = capabilities.features;
    recipe.setCapabilities(capabilities);
    jobs.setCapabilities(capabilities);
    await jobs.refresh();
  } catch (e) {
    const needsKey = /401|auth/i.test(describeError(e));
    say(status, `${describeError(e)}${needsKey ? " Enter an API key above." : ""}`, "error");
    if (needsKey) (byId("key-box") as HTMLDetailsElement).open = true;
  }
}

const compute = new ComputePanel(apiKey);

function keyChanged(key: string): void {
  setApiKey(key);
  void checkServer();
  void compute.keyChanged();
}

function setupKeyBox(): void {
  const input = byId<HTMLInputElement>("api-key");
  input.value = apiKey();
  byId("key-form").addEventListener("submit", (e) => {
    e.preventDefault();
    keyChanged(input.value.trim());
  });
  byId("key-clear").addEventListener("click", () => {
    input.value = "";
    keyChanged("");
  });
}

async function openDeepLink(): Promise<void> {
  const params = new URLSearchParams(location.hash.slice(1));
  const job = params.get("job");
  const recon = params.get("recon");
  if (job) await live.watch(job, recon);
  else if (recon) {
    try {
      const seq = params.has("seq") ? Number(params.get("seq")) : Math.max(...(await snapshotSeqs(recon)).seqs);
      if (!Number.isFinite(seq)) throw new Error("this reconstruction has no snapshot yet");
      await viewer.load(recon, seq);
    } catch (e) {
      say(byId("viewer-status"), `Could not open reconstruction ${recon}: ${describeError(e)}`, "error");
    }
  }
}

setupKeyBox();
void compute.init();
void checkServer().then(openDeepLink);
window.addEventListener("hashchange", () => void openDeepLink());
