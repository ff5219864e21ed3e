// Separable Gaussian smoothing as VLFeat's SIFT filter does it (vl/sift.c,
// _vl_sift_smooth / vl_imconvcol_vf): a sampled, normalised kernel of radius
// max(ceil(4 sigma), 1), borders clamped to the edge pixel ("padding by
// continuity"), first along y, then along x. See SIFT.md section 2.
#pragma once

#include <vector>

namespace edgesfm {

struct GaussianKernel {
  double sigma = 0.0;
  int radius = 0;
  // taps[r] for r = 0..radius (the kernel is symmetric: g[-r] = g[r]).
  std::vector<float> taps;
};

GaussianKernel MakeGaussianKernel(double sigma);

// Buffers reused across calls so that blurring never allocates once warm.
struct GaussianBlurScratch {
  std::vector<float> columns;  // the vertical pass, width x height
  std::vector<float> row;      // one row padded by the radius on both sides
};

// dst = src * g (dst may alias src). Summation order per output sample:
// centre tap, then the pairs (r, -r) for r = 1..radius, in float32.
void GaussianBlur(const float* src, float* dst, int width, int height, const GaussianKernel& kernel,
                  GaussianBlurScratch* scratch);

}  // namespace edgesfm
