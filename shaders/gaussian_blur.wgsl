// Separable Gaussian blur of one scale-space level (VLFeat's _vl_sift_smooth): a vertical pass
// then a horizontal pass, each reading a workgroup-shared tile with an apron of `radius` pixels,
// padding by continuity (clamp to edge) like VL_PAD_BY_CONTINUITY. Images are row-major f32
// planes inside larger buffers, addressed by element offsets so one buffer holds every level.

struct BlurParams {
  width: u32,
  height: u32,
  radius: u32,      // taps = 2 * radius + 1, radius = max(ceil(4 sigma), 1)
  src_offset: u32,  // first element of the source plane in `src`
  dst_offset: u32,  // first element of the destination plane in `dst`
}

@group(0) @binding(0) var<uniform> params: BlurParams;
@group(0) @binding(1) var<storage, read> weights: array<f32>;   // normalised taps, index 0 = offset -radius
@group(0) @binding(2) var<storage, read> src: array<f32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;

const TILE: u32 = 16u;
// Largest radius a tile holds: 4 sigma for sigma <= 8 covers 3 levels per octave with margin
// (the widest VLFeat kernel at S = 3 has radius 16).
const MAX_RADIUS: u32 = 32u;
const SPAN: u32 = TILE + 2u * MAX_RADIUS;

var<workgroup> tile: array<f32, TILE * SPAN>;

fn load(x: i32, y: i32) -> f32 {
  let cx = u32(clamp(x, 0, i32(params.width) - 1));
  let cy = u32(clamp(y, 0, i32(params.height) - 1));
  return src[params.src_offset + cy * params.width + cx];
}

// Tile layout: column-major in the blur direction, tile[along * TILE + across].
@compute @workgroup_size(16, 16)
fn blur_vertical(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let r = params.radius;
  let x = wg.x * TILE + lid.x;
  let y0 = i32(wg.y * TILE) - i32(r);
  for (var i = lid.y; i < TILE + 2u * r; i += TILE) {
    tile[i * TILE + lid.x] = load(i32(x), y0 + i32(i));
  }
  workgroupBarrier();
  let y = wg.y * TILE + lid.y;
  if (x >= params.width || y >= params.height) { return; }
  var acc = 0.0;
  for (var k = 0u; k <= 2u * r; k++) {
    acc += weights[k] * tile[(lid.y + k) * TILE + lid.x];
  }
  dst[params.dst_offset + y * params.width + x] = acc;
}

@compute @workgroup_size(16, 16)
fn blur_horizontal(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let r = params.radius;
  let y = wg.y * TILE + lid.y;
  let x0 = i32(wg.x * TILE) - i32(r);
  for (var i = lid.x; i < TILE + 2u * r; i += TILE) {
    tile[i * TILE + lid.y] = load(x0 + i32(i), i32(y));
  }
  workgroupBarrier();
  let x = wg.x * TILE + lid.x;
  if (x >= params.width || y >= params.height) { return; }
  var acc = 0.0;
  for (var k = 0u; k <= 2u * r; k++) {
    acc += weights[k] * tile[(lid.x + k) * TILE + lid.y];
  }
  dst[params.dst_offset + y * params.width + x] = acc;
}

// Direct variants without workgroup memory: software adapters (SwiftShader, lavapipe) emulate
// workgroup barriers by switching between invocations, which makes the tiled kernels several
// times slower there (measured 6x on SwiftShader), so the host uses these on fallback adapters.
@compute @workgroup_size(64)
fn blur_vertical_direct(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= params.width || id.y >= params.height) { return; }
  let r = i32(params.radius);
  var acc = 0.0;
  for (var k = -r; k <= r; k++) {
    acc += weights[u32(k + r)] * load(i32(id.x), i32(id.y) + k);
  }
  dst[params.dst_offset + id.y * params.width + id.x] = acc;
}

@compute @workgroup_size(64)
fn blur_horizontal_direct(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= params.width || id.y >= params.height) { return; }
  let r = i32(params.radius);
  var acc = 0.0;
  for (var k = -r; k <= r; k++) {
    acc += weights[u32(k + r)] * load(i32(id.x) + k, i32(id.y));
  }
  dst[params.dst_offset + id.y * params.width + id.x] = acc;
}
