// SIFT descriptors (engine-wasm/src/feature/SIFT.md section 6, after VLFeat
// vl_sift_calc_keypoint_descriptor, with COLMAP's normalisation, quantisation and bin layout).
// The host prepends sift_common.wgsl.
//
// One workgroup row of 16 threads per (keypoint, orientation): thread `cell` owns spatial bin
// (bx, by) = (cell % 4 - 2, cell / 4 - 2) and its 8 orientation bins. It scans, in VLFeat's
// raster order, only the pixels whose trilinear footprint reaches its bin, so every bin sums
// exactly the samples VLFeat adds to it, in the same order, with no atomics.

struct DescriptorParams {
  width: u32,
  height: u32,
  num_keypoints: u32,
  root_sift: u32,  // 1: COLMAP L1_ROOT normalisation, 0: L2
  slots: u32,      // orientation slots per keypoint (sift_orientation.wgsl)
}

const SLOTS_PER_GROUP: u32 = 4u;

@group(0) @binding(0) var<uniform> params: DescriptorParams;
@group(0) @binding(1) var<storage, read> gauss: array<f32>;             // S + 3 planes, s = -1 .. S + 1
@group(0) @binding(2) var<storage, read> keypoints: array<Keypoint>;
@group(0) @binding(3) var<storage, read> order: array<vec2u>;           // sorted (sort_key, keypoint index)
@group(0) @binding(4) var<storage, read> angles: array<f32>;            // `slots` per sorted keypoint
@group(0) @binding(5) var<storage, read> num_angles: array<u32>;
@group(0) @binding(6) var<storage, read_write> descriptors: array<u32>; // 32 words (128 bytes) per slot

var<workgroup> bins: array<array<f32, 128>, SLOTS_PER_GROUP>;
var<workgroup> scale: array<f32, SLOTS_PER_GROUP>;  // COLMAP's final L2 or L1 norm per row

// Scans this thread's part of the window and fills bins[slot_in_group][8 cell .. 8 cell + 7].
fn accumulate_cell(kp: Keypoint, angle0: f32, cell: u32, g: u32) {
  let w = i32(params.width);
  let h = i32(params.height);
  let xi = i32(kp.x + 0.5);
  let yi = i32(kp.y + 0.5);
  var acc: array<f32, 8>;
  // VLFeat skips keypoints this close to the border; SIFT.md: their descriptor is zero.
  if (xi < 0 || xi >= w || yi < 0 || yi >= h - 1) {
    for (var t = 0u; t < 8u; t++) { bins[g][8u * cell + t] = 0.0; }
    return;
  }
  let SBP = 3.0 * kp.sigma;
  let W = i32(floor(sqrt(2.0) * SBP * 5.0 / 2.0 + 0.5));
  // Rotation and division by the bin size folded into one matrix (SIFT.md section 6).
  let c = cos(angle0) / SBP;
  let s = sin(angle0) / SBP;
  // Gaussian window of sigma 2 bins: separable, exp(-d^2 / (8 SBP^2)) per row and column.
  let inv_two_window_var = 1.0 / (8.0 * SBP * SBP);
  let cx = i32(cell % 4u) - 2;
  let cy = i32(cell / 4u) - 2;
  // Samples reaching bin cx have nx in [cx - 0.5, cx + 1.5): the rotated square below, in pixels.
  var lo = vec2f(1e30);
  var hi = vec2f(-1e30);
  for (var corner = 0; corner < 4; corner++) {
    let nx = f32(cx) - 0.5 + 2.0 * f32(corner & 1);
    let ny = f32(cy) - 0.5 + 2.0 * f32(corner >> 1);
    let d = SBP * vec2f(cos(angle0) * nx - sin(angle0) * ny, sin(angle0) * nx + cos(angle0) * ny);
    lo = min(lo, d);
    hi = max(hi, d);
  }
  let off = vec2f(kp.x - f32(xi), kp.y - f32(yi));
  let u0 = max(max(-W, 1 - xi), i32(floor(lo.x + off.x)) - 1);
  let u1 = min(min(W, w - xi - 2), i32(ceil(hi.x + off.x)) + 1);
  let v0 = max(max(-W, 1 - yi), i32(floor(lo.y + off.y)) - 1);
  let v1 = min(min(W, h - yi - 2), i32(ceil(hi.y + off.y)) + 1);
  for (var dyi = v0; dyi <= v1; dyi++) {
    let dy = f32(yi + dyi) - kp.y;
    let wrow = exp(-dy * dy * inv_two_window_var);
    for (var dxi = u0; dxi <= u1; dxi++) {
      let dx = f32(xi + dxi) - kp.x;
      let nx = c * dx + s * dy;
      let ny = -s * dx + c * dy;
      if (nx < -2.5 || nx >= 2.5 || ny < -2.5 || ny >= 2.5) { continue; }
      let binx = i32(floor(nx - 0.5));
      let biny = i32(floor(ny - 0.5));
      // Only the two bins at binx and binx + 1 receive this sample.
      if ((binx != cx && binx + 1 != cx) || (biny != cy && biny + 1 != cy)) { continue; }
      let gm = gradient_at(u32(w), u32(h), kp.level, u32(xi + dxi), u32(yi + dyi));
      var theta = gm.y - angle0;  // in [-2 pi, 2 pi]
      if (theta < 0.0) { theta += TWO_PI; }
      let nt = (8.0 / TWO_PI) * theta;
      let bint = i32(nt);
      let rbinx = nx - (f32(binx) + 0.5);
      let rbiny = ny - (f32(biny) + 0.5);
      let rbint = nt - f32(bint);
      // Weights in the CPU path's order: window_x * window_y * magnitude, then y, x, theta.
      let wgt = exp(-dx * dx * inv_two_window_var) * wrow * gm.x;
      let wy = select(1.0 - rbiny, rbiny, cy == biny + 1);
      let wx = select(1.0 - rbinx, rbinx, cx == binx + 1);
      let w0 = wgt * wy * wx;
      acc[bint & 7] += w0 * (1.0 - rbint);
      acc[(bint + 1) & 7] += w0 * rbint;
    }
  }
  for (var t = 0u; t < 8u; t++) { bins[g][8u * cell + t] = acc[t]; }
}

// VLFeat order index of cell c, bin t: t + 8 (bx + 2) + 32 (by + 2) = 8 c + t.
fn l2_norm(g: u32) -> f32 {
  var sum = 0.0;
  for (var i = 0u; i < 128u; i++) { sum += bins[g][i] * bins[g][i]; }
  return sqrt(sum);
}

@compute @workgroup_size(16, 4)
fn descriptors_main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) nwg: vec3u,
                    @builtin(local_invocation_id) lid: vec3u) {
  let cell = lid.x;
  let g = lid.y;
  let slot = ((wg.y * nwg.x) + wg.x) * SLOTS_PER_GROUP + g;
  let k = slot / params.slots;
  let valid = k < params.num_keypoints && slot % params.slots < num_angles[min(k, params.num_keypoints - 1u)];
  if (valid) {
    accumulate_cell(keypoints[order[k].y], angles[slot], cell, g);
  }
  workgroupBarrier();
  // Lowe: normalise, clamp at 0.2, normalise again (thread 0 of the row sums in VLFeat order).
  if (cell == 0u && valid) {
    let n1 = l2_norm(g) + FLT_EPSILON;
    for (var i = 0u; i < 128u; i++) { bins[g][i] = min(bins[g][i] / n1, 0.2); }
    let n2 = l2_norm(g) + FLT_EPSILON;
    for (var i = 0u; i < 128u; i++) { bins[g][i] /= n2; }
    // COLMAP: L2 renormalisation, or RootSIFT (L1-normalise, then square root).
    var norm: f32;
    if (params.root_sift != 0u) {
      norm = 0.0;
      for (var i = 0u; i < 128u; i++) { norm += abs(bins[g][i]); }
    } else {
      norm = l2_norm(g);
    }
    scale[g] = norm;
  }
  workgroupBarrier();
  if (!valid) { return; }
  // Quantise this cell's 8 bins to bytes, UBC order: bin t goes to (8 - t) % 8.
  var q: array<u32, 8>;
  for (var t = 0u; t < 8u; t++) {
    var v = select(0.0, bins[g][8u * cell + t] / scale[g], scale[g] > 0.0);
    if (params.root_sift != 0u) { v = sqrt(v); }
    q[(8u - t) % 8u] = u32(min(255.0, floor(512.0 * v + 0.5)));
  }
  let base = slot * 32u + cell * 2u;
  descriptors[base] = q[0] | (q[1] << 8u) | (q[2] << 16u) | (q[3] << 24u);
  descriptors[base + 1u] = q[4] | (q[5] << 8u) | (q[6] << 16u) | (q[7] << 24u);
}
