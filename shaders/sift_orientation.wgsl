// SIFT keypoint orientations in one octave (engine-wasm/src/feature/SIFT.md section 5, after
// VLFeat vl_sift_calc_keypoint_orientations), gradients from sift_common.wgsl gradient_at.
// The host prepends sift_common.wgsl.

struct OrientationParams {
  width: u32,
  height: u32,
  levels: u32,            // S
  num_keypoints: u32,
  slots: u32,             // orientations kept per keypoint: min(max_num_orientations, 4) (VLFeat finds <= 4)
  upright: u32,
}

const NBINS: i32 = 36;

@group(0) @binding(0) var<uniform> params: OrientationParams;
@group(0) @binding(1) var<storage, read> gauss: array<f32>;             // S + 3 planes, s = -1 .. S + 1
@group(0) @binding(3) var<storage, read> keypoints: array<Keypoint>;
@group(0) @binding(4) var<storage, read> order: array<vec2u>;           // sorted (sort_key, keypoint index)
@group(0) @binding(5) var<storage, read_write> angles: array<f32>;      // `slots` per sorted keypoint
@group(0) @binding(6) var<storage, read_write> num_angles: array<u32>;  // per sorted keypoint

// One thread per keypoint (in sorted order): 36-bin histogram over a circular Gaussian window
// of sigma 1.5 sigma, 6 circular box smoothings, then peaks above 0.8 max in bin order with
// parabolic interpolation; the first `slots` peaks are kept, as COLMAP does.
@compute @workgroup_size(64)
fn orientations(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let k = id.y * nwg.x * 64u + id.x;
  if (k >= params.num_keypoints) { return; }
  let kp = keypoints[order[k].y];
  if (params.upright != 0u) {
    angles[k * params.slots] = 0.0;
    num_angles[k] = 1u;
    return;
  }
  let w = i32(params.width);
  let h = i32(params.height);
  let xi = i32(kp.x + 0.5);
  let yi = i32(kp.y + 0.5);
  let sigma_w = 1.5 * kp.sigma;
  let R = max(i32(floor(3.0 * sigma_w)), 1);
  var hist: array<f32, 36>;
  for (var ys = max(-R, -yi); ys <= min(R, h - 1 - yi); ys++) {
    for (var xs = max(-R, -xi); xs <= min(R, w - 1 - xi); xs++) {
      let dx = f32(xi + xs) - kp.x;
      let dy = f32(yi + ys) - kp.y;
      let r2 = dx * dx + dy * dy;
      if (r2 >= f32(R * R) + 0.6) { continue; }
      let wgt = fast_expn(r2 / (2.0 * sigma_w * sigma_w));
      let g = gradient_at(u32(w), u32(h), kp.level, u32(xi + xs), u32(yi + ys));
      let fbin = f32(NBINS) * g.y / TWO_PI;
      // SIFT.md: the vote splits between the two nearest bin centres (VL_SIFT_BILINEAR_ORIENTATIONS).
      let bin = i32(floor(fbin - 0.5));
      let rbin = fbin - f32(bin) - 0.5;
      hist[(bin + NBINS) % NBINS] += (1.0 - rbin) * g.x * wgt;
      hist[(bin + 1) % NBINS] += rbin * g.x * wgt;
    }
  }
  for (var smoothing = 0; smoothing < 6; smoothing++) {
    var prev = hist[NBINS - 1];
    let first = hist[0];
    for (var i = 0; i < NBINS - 1; i++) {
      let smoothed = (prev + hist[i] + hist[i + 1]) / 3.0;
      prev = hist[i];
      hist[i] = smoothed;
    }
    hist[NBINS - 1] = (prev + hist[NBINS - 1] + first) / 3.0;
  }
  var maxh = 0.0;
  for (var i = 0; i < NBINS; i++) { maxh = max(maxh, hist[i]); }
  var n = 0u;
  for (var i = 0; i < NBINS && n < params.slots; i++) {
    let h0 = hist[i];
    let hm = hist[(i - 1 + NBINS) % NBINS];
    let hp = hist[(i + 1) % NBINS];
    if (h0 > 0.8 * maxh && h0 > hm && h0 > hp) {
      let di = -0.5 * (hp - hm) / (hp + hm - 2.0 * h0);
      angles[k * params.slots + n] = TWO_PI * (f32(i) + di + 0.5) / f32(NBINS);
      n++;
    }
  }
  num_angles[k] = n;
}
