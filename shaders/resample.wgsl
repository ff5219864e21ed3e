// Octave changes of the SIFT scale space, bit-exact with VLFeat:
//  - upsample_2x: copy_and_upsample_rows applied along x then along y: even samples copy, odd
//    samples average their two neighbours, the last one repeats (first_octave = -1).
//  - downsample_2x: copy_and_downsample, the next octave's base is every second pixel of level
//    s_min + S of the previous octave.

struct ResampleParams {
  src_width: u32,
  src_height: u32,
  dst_width: u32,
  dst_height: u32,
  src_offset: u32,
  dst_offset: u32,
}

@group(0) @binding(0) var<uniform> params: ResampleParams;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

fn src_at(x: u32, y: u32) -> f32 {
  return src[params.src_offset + y * params.src_width + x];
}

// Value of the x-upsampled row `y` at output column `ox`.
fn upsampled_row(ox: u32, y: u32) -> f32 {
  let x = ox / 2u;
  if ((ox & 1u) == 0u) { return src_at(x, y); }
  if (x + 1u >= params.src_width) { return src_at(x, y); }
  return 0.5 * (src_at(x, y) + src_at(x + 1u, y));
}

@compute @workgroup_size(16, 16)
fn upsample_2x(@builtin(global_invocation_id) id: vec3u) {
  let ox = id.x;
  let oy = id.y;
  if (ox >= params.dst_width || oy >= params.dst_height) { return; }
  let y = oy / 2u;
  var v: f32;
  if ((oy & 1u) == 0u || y + 1u >= params.src_height) {
    v = upsampled_row(ox, y);
  } else {
    v = 0.5 * (upsampled_row(ox, y) + upsampled_row(ox, y + 1u));
  }
  dst[params.dst_offset + oy * params.dst_width + ox] = v;
}

@compute @workgroup_size(16, 16)
fn downsample_2x(@builtin(global_invocation_id) id: vec3u) {
  if (id.x >= params.dst_width || id.y >= params.dst_height) { return; }
  dst[params.dst_offset + id.y * params.dst_width + id.x] = src_at(2u * id.x, 2u * id.y);
}
