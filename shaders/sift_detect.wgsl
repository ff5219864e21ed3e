// SIFT detection in one octave (VLFeat vl_sift_detect): on the difference of Gaussians (computed
// from the Gaussian planes by sift_common.wgsl dog_at), 26-neighbour
// extrema above 0.8 * peak_threshold, then Lowe's sub-pixel/sub-scale refinement (up to 5
// Newton steps moving by whole pixels when the offset exceeds 0.6) with the contrast and edge
// tests. Accepted keypoints are appended with an atomic counter, so their order is arbitrary:
// each carries `sort_key` = its detection position (level, row, column), the order in which
// VLFeat's scan finds it, and bitonic_sort.wgsl restores that order. The host prepends
// sift_common.wgsl.

struct DetectParams {
  width: u32,
  height: u32,
  capacity: u32,         // keypoint slots in `keypoints`
  levels: u32,           // S, scales per octave (Gaussian planes = S + 3, DoG levels = S + 2)
  peak_threshold: f32,
  edge_threshold: f32,
  sigma0: f32,           // VLFeat sigma0 = 1.6 * 2^(1/S), in octave pixels
  _pad: u32,
}

@group(0) @binding(0) var<uniform> params: DetectParams;
@group(0) @binding(1) var<storage, read> gauss: array<f32>;       // S + 3 planes, s = -1 .. S + 1
@group(0) @binding(3) var<storage, read_write> keypoints: array<Keypoint>;
@group(0) @binding(4) var<storage, read_write> counter: array<atomic<u32>>;  // [0] = appended keypoints
// (sort_key, slot) per appended keypoint, for bitonic_sort.wgsl; the host pre-fills the buffer
// with 0xffffffff so the padding to a power of two sorts last.
@group(0) @binding(5) var<storage, read_write> sort_pairs: array<vec2u>;

// DoG value at (x, y) in plane `p` (p = s - s_min = s + 1).
fn D(x: i32, y: i32, p: i32) -> f32 {
  return dog_at(params.width * params.height, u32(p), u32(y) * params.width + u32(x));
}

fn is_extremum(x: i32, y: i32, p: i32) -> bool {
  let v = D(x, y, p);
  let t = 0.8 * params.peak_threshold;
  var is_max = v >= t;
  var is_min = v <= -t;
  for (var dp = -1; dp <= 1; dp++) {
    for (var dy = -1; dy <= 1; dy++) {
      for (var dx = -1; dx <= 1; dx++) {
        if (dp == 0 && dy == 0 && dx == 0) { continue; }
        let n = D(x + dx, y + dy, p + dp);
        is_max = is_max && v > n;
        is_min = is_min && v < n;
      }
    }
    if (!is_max && !is_min) { return false; }
  }
  return is_max || is_min;
}

@compute @workgroup_size(16, 16)
fn detect_extrema(@builtin(global_invocation_id) id: vec3u) {
  let w = i32(params.width);
  let h = i32(params.height);
  let x0 = i32(id.x) + 1;
  let y0 = i32(id.y) + 1;
  let s = i32(id.z);  // detection level s = 0 .. S - 1, DoG plane s + 1
  if (x0 >= w - 1 || y0 >= h - 1 || s >= i32(params.levels)) { return; }
  let p = s + 1;
  if (!is_extremum(x0, y0, p)) { return; }

  var x = x0;
  var y = y0;
  var dx = 0;
  var dy = 0;
  var Dx = 0.0; var Dy = 0.0; var Ds = 0.0;
  var Dxx = 0.0; var Dyy = 0.0; var Dss = 0.0; var Dxy = 0.0; var Dxs = 0.0; var Dys = 0.0;
  var b = vec3f(0.0);
  for (var iter = 0; iter < 5; iter++) {
    x += dx;
    y += dy;
    let c = D(x, y, p);
    Dx = 0.5 * (D(x + 1, y, p) - D(x - 1, y, p));
    Dy = 0.5 * (D(x, y + 1, p) - D(x, y - 1, p));
    Ds = 0.5 * (D(x, y, p + 1) - D(x, y, p - 1));
    Dxx = D(x + 1, y, p) + D(x - 1, y, p) - 2.0 * c;
    Dyy = D(x, y + 1, p) + D(x, y - 1, p) - 2.0 * c;
    Dss = D(x, y, p + 1) + D(x, y, p - 1) - 2.0 * c;
    Dxy = 0.25 * (D(x + 1, y + 1, p) + D(x - 1, y - 1, p) - D(x - 1, y + 1, p) - D(x + 1, y - 1, p));
    Dxs = 0.25 * (D(x + 1, y, p + 1) + D(x - 1, y, p - 1) - D(x - 1, y, p + 1) - D(x + 1, y, p - 1));
    Dys = 0.25 * (D(x, y + 1, p + 1) + D(x, y - 1, p - 1) - D(x, y - 1, p + 1) - D(x, y + 1, p - 1));
    b = solve_3x3(Dxx, Dyy, Dss, Dxy, Dxs, Dys, vec3f(-Dx, -Dy, -Ds));
    dx = select(0, 1, b.x > 0.6 && x < w - 2) + select(0, -1, b.x < -0.6 && x > 1);
    dy = select(0, 1, b.y > 0.6 && y < h - 2) + select(0, -1, b.y < -0.6 && y > 1);
    if (dx == 0 && dy == 0) { break; }
  }

  let val = D(x, y, p) + 0.5 * (Dx * b.x + Dy * b.y + Ds * b.z);
  let det = Dxx * Dyy - Dxy * Dxy;
  let te = params.edge_threshold;
  // score = tr^2 / det; det == 0 gives +inf or NaN in VLFeat's double arithmetic: rejected.
  let score = select(-1.0, (Dxx + Dyy) * (Dxx + Dyy) / det, det != 0.0);
  let xn = f32(x) + b.x;
  let yn = f32(y) + b.y;
  let sn = f32(s) + b.z;
  let good = abs(val) > params.peak_threshold
    && score < (te + 1.0) * (te + 1.0) / te && score >= 0.0
    && all(abs(b) < vec3f(1.5))
    && xn >= 0.0 && xn <= f32(w - 1) && yn >= 0.0 && yn <= f32(h - 1)
    && sn >= -1.0 && sn <= f32(params.levels) + 1.0;
  if (!good) { return; }
  let slot = atomicAdd(&counter[0], 1u);
  if (slot >= params.capacity) { return; }  // the host sees counter > capacity and reruns bigger
  let key = (u32(s) << 28u) | (u32(y0) << 14u) | u32(x0);
  keypoints[slot] = Keypoint(xn, yn, params.sigma0 * exp2(sn / f32(params.levels)), sn, u32(x), u32(y), u32(s), key);
  sort_pairs[slot] = vec2u(key, slot);
}

// Gauss elimination with partial pivoting, exactly VLFeat's (singular -> zero offset).
fn solve_3x3(Dxx: f32, Dyy: f32, Dss: f32, Dxy: f32, Dxs: f32, Dys: f32, rhs: vec3f) -> vec3f {
  var A = array<vec3f, 3>(vec3f(Dxx, Dxy, Dxs), vec3f(Dxy, Dyy, Dys), vec3f(Dxs, Dys, Dss));  // rows
  var b = rhs;
  for (var j = 0; j < 3; j++) {
    var maxa = 0.0;
    var maxabsa = 0.0;
    var maxi = -1;
    for (var i = j; i < 3; i++) {
      let a = A[i][j];
      if (abs(a) > maxabsa) { maxa = a; maxabsa = abs(a); maxi = i; }
    }
    if (maxabsa < 1e-10) { return vec3f(0.0); }
    let row_i = A[maxi];
    A[maxi] = A[j];
    A[j] = row_i / maxa;
    let bi = b[maxi];
    b[maxi] = b[j];
    b[j] = bi / maxa;
    for (var ii = j + 1; ii < 3; ii++) {
      let f = A[ii][j];
      A[ii] -= f * A[j];
      b[ii] -= f * b[j];
    }
  }
  b[1] -= b[2] * A[1][2];
  b[0] -= b[2] * A[0][2];
  b[0] -= b[1] * A[0][1];
  return b;
}
