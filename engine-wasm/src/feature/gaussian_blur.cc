#include "feature/gaussian_blur.h"

#include <algorithm>
#include <cmath>

namespace edgesfm {

GaussianKernel MakeGaussianKernel(double sigma) {
  GaussianKernel kernel;
  kernel.sigma = sigma;
  kernel.radius = std::max(static_cast<int>(std::ceil(4.0 * sigma)), 1);
  // VLFeat computes the taps and their sum in float over the full support.
  std::vector<float> full(2 * kernel.radius + 1);
  float sum = 0.0f;
  for (int j = 0; j < static_cast<int>(full.size()); ++j) {
    const float d = static_cast<float>(j - kernel.radius) / static_cast<float>(sigma);
    full[j] = static_cast<float>(std::exp(-0.5 * static_cast<double>(d * d)));
    sum += full[j];
  }
  kernel.taps.resize(kernel.radius + 1);
  for (int r = 0; r <= kernel.radius; ++r) kernel.taps[r] = full[kernel.radius + r] / sum;
  return kernel;
}

namespace {

// Vertical pass: each output row is a weighted sum of whole input rows, so the
// inner loop runs over contiguous x and vectorises (wasm simd128 / SSE).
void BlurColumns(const float* src, float* dst, int width, int height, const GaussianKernel& k) {
  const int radius = k.radius;
  const float* taps = k.taps.data();
  for (int y = 0; y < height; ++y) {
    float* __restrict out = dst + static_cast<size_t>(y) * width;
    const float* __restrict centre = src + static_cast<size_t>(y) * width;
    const float t0 = taps[0];
    for (int x = 0; x < width; ++x) out[x] = t0 * centre[x];
    for (int r = 1; r <= radius; ++r) {
      const float* __restrict above = src + static_cast<size_t>(std::max(y - r, 0)) * width;
      const float* __restrict below =
          src + static_cast<size_t>(std::min(y + r, height - 1)) * width;
      const float t = taps[r];
      for (int x = 0; x < width; ++x) out[x] += t * (above[x] + below[x]);
    }
  }
}

// Horizontal pass: each row is copied with `radius` clamped samples on each
// side, then taps are applied one at a time over the whole row (contiguous,
// vectorisable, the row stays in L1).
void BlurRows(const float* src, float* dst, int width, int height, const GaussianKernel& k,
              std::vector<float>* padded) {
  const int radius = k.radius;
  const float* taps = k.taps.data();
  padded->resize(static_cast<size_t>(width) + 2 * radius);
  for (int y = 0; y < height; ++y) {
    const float* in = src + static_cast<size_t>(y) * width;
    float* __restrict out = dst + static_cast<size_t>(y) * width;
    float* pad = padded->data();
    std::fill(pad, pad + radius, in[0]);
    std::copy(in, in + width, pad + radius);
    std::fill(pad + radius + width, pad + 2 * radius + width, in[width - 1]);
    const float* __restrict centre = pad + radius;
    const float t0 = taps[0];
    for (int x = 0; x < width; ++x) out[x] = t0 * centre[x];
    for (int r = 1; r <= radius; ++r) {
      const float t = taps[r];
      const float* __restrict left = centre - r;
      const float* __restrict right = centre + r;
      for (int x = 0; x < width; ++x) out[x] += t * (left[x] + right[x]);
    }
  }
}

}  // namespace

void GaussianBlur(const float* src, float* dst, int width, int height, const GaussianKernel& kernel,
                  GaussianBlurScratch* scratch) {
  const size_t n = static_cast<size_t>(width) * height;
  if (scratch->columns.size() < n) scratch->columns.resize(n);
  BlurColumns(src, scratch->columns.data(), width, height, kernel);
  BlurRows(scratch->columns.data(), dst, width, height, kernel, &scratch->row);
}

}  // namespace edgesfm
