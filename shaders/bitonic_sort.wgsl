// Bitonic sort of (key, value) pairs by key, ascending, in place. Keypoints are appended by
// atomics in a nondeterministic order; sorting by their detection key makes the output order
// VLFeat's raster order and identical run to run. The host pads the array to a power of two with
// key 0xffffffff and dispatches one step per (block, stride) pair: n/2 threads, each comparing
// one pair.

struct SortParams {
  block: u32,   // size of the bitonic sequences being merged (2, 4, ..., n)
  stride: u32,  // compare distance within this merge step (block/2, ..., 1)
  count: u32,   // padded length n (power of two)
}

@group(0) @binding(0) var<uniform> params: SortParams;
@group(0) @binding(1) var<storage, read_write> pairs: array<vec2u>;

@compute @workgroup_size(256)
fn bitonic_step(@builtin(global_invocation_id) id: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let t = id.y * nwg.x * 256u + id.x;
  if (t >= params.count / 2u) { return; }
  // Index of the lower element of pair t: insert a zero bit at position log2(stride).
  let lo = (t / params.stride) * 2u * params.stride + t % params.stride;
  let hi = lo + params.stride;
  let ascending = (lo & params.block) == 0u;
  let a = pairs[lo];
  let b = pairs[hi];
  if ((a.x > b.x) == ascending) {
    pairs[lo] = b;
    pairs[hi] = a;
  }
}
