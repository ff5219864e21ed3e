#include "feature/sift_descriptor.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "feature/sift_math.h"

namespace edgesfm {

using sift_math::FastAtan2;
using sift_math::Mod2Pi;

void ComputeGradients(const float* level, int width, int height, std::vector<float>* grad) {
  const int w = width;
  const int h = height;
  grad->resize(2 * static_cast<size_t>(w) * h);
  float* out = grad->data();
  const float two_pi = sift_math::kTwoPiF;
  for (int y = 0; y < h; ++y) {
    const float* row = level + static_cast<size_t>(y) * w;
    const float* up = level + static_cast<size_t>(y > 0 ? y - 1 : y) * w;
    const float* down = level + static_cast<size_t>(y < h - 1 ? y + 1 : y) * w;
    // Central differences inside, one-sided on the first/last row and column.
    const float y_scale = (y > 0 && y < h - 1) ? 0.5f : 1.0f;
    float* o = out + 2 * static_cast<size_t>(y) * w;
    for (int x = 0; x < w; ++x) {
      float gx;
      if (x == 0) {
        gx = row[1] - row[0];
      } else if (x == w - 1) {
        gx = row[x] - row[x - 1];
      } else {
        gx = 0.5f * (row[x + 1] - row[x - 1]);
      }
      const float gy = y_scale * (down[x] - up[x]);
      o[2 * x] = std::sqrt(gx * gx + gy * gy);
      o[2 * x + 1] = Mod2Pi(FastAtan2(gy, gx) + two_pi);
    }
  }
}

int ComputeOrientations(const float* grad, int width, int height, const SiftDetection& kp,
                        double angles[4]) {
  constexpr int kBins = SiftConstants::kOrientationBins;
  const double x = kp.x;
  const double y = kp.y;
  const double sigma = kp.sigma;
  const int xi = static_cast<int>(x + 0.5);
  const int yi = static_cast<int>(y + 0.5);
  const double sigma_w = SiftConstants::kOrientationWindowFactor * sigma;
  const int radius = std::max(static_cast<int>(std::floor(3.0 * sigma_w)), 1);
  if (xi < 0 || xi > width - 1 || yi < 0 || yi > height - 1) return 0;

  double hist[kBins] = {};
  const sift_math::FastExpn& expn = sift_math::Expn();
  for (int ys = std::max(-radius, -yi); ys <= std::min(radius, height - 1 - yi); ++ys) {
    const float* row = grad + 2 * (static_cast<size_t>(yi + ys) * width);
    for (int xs = std::max(-radius, -xi); xs <= std::min(radius, width - 1 - xi); ++xs) {
      const double dx = static_cast<double>(xi + xs) - x;
      const double dy = static_cast<double>(yi + ys) - y;
      const double r2 = dx * dx + dy * dy;
      if (r2 >= radius * radius + 0.6) continue;
      const double weight = expn(r2 / (2 * sigma_w * sigma_w));
      const double mod = row[2 * (xi + xs)];
      const double ang = row[2 * (xi + xs) + 1];
      // Each vote splits linearly between the two nearest bin centres, as VLFeat (and so
      // COLMAP) compiles it with VL_SIFT_BILINEAR_ORIENTATIONS.
      const double fbin = kBins * ang / (2 * sift_math::kPi);
      const int bin = static_cast<int>(std::floor(fbin - 0.5));
      const double rbin = fbin - bin - 0.5;
      hist[(bin + kBins) % kBins] += (1 - rbin) * mod * weight;
      hist[(bin + 1) % kBins] += rbin * mod * weight;
    }
  }

  for (int pass = 0; pass < SiftConstants::kOrientationSmoothingPasses; ++pass) {
    double prev = hist[kBins - 1];
    const double first = hist[0];
    int i = 0;
    for (; i < kBins - 1; ++i) {
      const double smoothed = (prev + hist[i] + hist[i + 1]) / 3.0;
      prev = hist[i];
      hist[i] = smoothed;
    }
    hist[i] = (prev + hist[i] + first) / 3.0;
  }

  double max_h = 0;
  for (double v : hist) max_h = std::max(max_h, v);
  int count = 0;
  for (int i = 0; i < kBins; ++i) {
    const double h0 = hist[i];
    const double hm = hist[(i - 1 + kBins) % kBins];
    const double hp = hist[(i + 1) % kBins];
    if (h0 > SiftConstants::kOrientationPeakRatio * max_h && h0 > hm && h0 > hp) {
      const double di = -0.5 * (hp - hm) / (hp + hm - 2 * h0);
      angles[count++] = 2 * sift_math::kPi * (i + di + 0.5) / kBins;
      if (count == SiftConstants::kMaxOrientationsVLFeat) break;
    }
  }
  return count;
}

namespace {

void NormalizeL2WithEpsilon(float* v) {
  float norm = 0.0f;
  for (int i = 0; i < 128; ++i) norm += v[i] * v[i];
  norm = std::sqrt(norm) + FLT_EPSILON;
  for (int i = 0; i < 128; ++i) v[i] /= norm;
}

}  // namespace

void ComputeDescriptor(const float* grad, int width, int height, const SiftDetection& kp,
                       double angle0, float descriptor[128]) {
  constexpr int kNBO = SiftConstants::kOrientationBinsDescriptor;
  constexpr int kNBP = SiftConstants::kSpatialBins;
  std::memset(descriptor, 0, sizeof(float) * 128);
  const double x = kp.x;
  const double y = kp.y;
  const int xi = static_cast<int>(x + 0.5);
  const int yi = static_cast<int>(y + 0.5);
  if (xi < 0 || xi >= width || yi < 0 || yi >= height - 1) return;

  const double sbp = SiftConstants::kMagnification * kp.sigma + DBL_EPSILON;
  const int radius = static_cast<int>(std::floor(std::sqrt(2.0) * sbp * (kNBP + 1) / 2.0 + 0.5));
  // The rotation and the division by the bin size folded into one float matrix.
  const float c = static_cast<float>(std::cos(angle0) / sbp);
  const float s = static_cast<float>(std::sin(angle0) / sbp);
  const float angle0f = static_cast<float>(angle0);
  const float orientation_scale = static_cast<float>(kNBO / (2 * sift_math::kPi));
  const float two_pi = sift_math::kTwoPiF;
  const float fx = static_cast<float>(x);
  const float fy = static_cast<float>(y);

  // The Gaussian window (sigma = 2 bins = 2 SBP pixels) depends only on the
  // distance to the keypoint, which the rotation preserves, so it factors into
  // a column weight times a row weight (SIFT.md section 6).
  const double inv_two_window_var = 1.0 / (2.0 * SiftConstants::kDescriptorWindowSigma *
                                           SiftConstants::kDescriptorWindowSigma * sbp * sbp);
  const int x_lo = std::max(-radius, 1 - xi), x_hi = std::min(radius, width - xi - 2);
  const int y_lo = std::max(-radius, 1 - yi), y_hi = std::min(radius, height - yi - 2);
  float window_x[128], window_y[128];  // radius <= 63 for any sigma an octave holds
  const int max_radius = 63;
  if (radius > max_radius) return;
  for (int d = x_lo; d <= x_hi; ++d) {
    const double dx = static_cast<double>(static_cast<float>(xi + d) - fx);
    window_x[d + max_radius] = static_cast<float>(std::exp(-dx * dx * inv_two_window_var));
  }
  for (int d = y_lo; d <= y_hi; ++d) {
    const double dy = static_cast<double>(static_cast<float>(yi + d) - fy);
    window_y[d + max_radius] = static_cast<float>(std::exp(-dy * dy * inv_two_window_var));
  }

  // Bins are addressed with (bx, by) in [-3, 1] shifted to [0, 4]; a 6x6x8 padded
  // accumulator takes the out-of-range neighbours so the inner loop has no tests.
  float acc[6][6][kNBO] = {};
  for (int dyi = y_lo; dyi <= y_hi; ++dyi) {
    const float* row = grad + 2 * (static_cast<size_t>(yi + dyi) * width);
    const float dy = static_cast<float>(yi + dyi) - fy;
    const float wrow = window_y[dyi + max_radius];
    for (int dxi = x_lo; dxi <= x_hi; ++dxi) {
      const float dx = static_cast<float>(xi + dxi) - fx;
      const float nx = c * dx + s * dy;
      const float ny = -s * dx + c * dy;
      // Samples outside [-2.5, 2.5)^2 in bin units reach no bin: skipping them is
      // exact and halves the work (the square window is rotated).
      if (nx < -2.5f || nx >= 2.5f || ny < -2.5f || ny >= 2.5f) continue;
      const float mod = row[2 * (xi + dxi)];
      float theta = row[2 * (xi + dxi) + 1] - angle0f;  // in [-2 pi, 2 pi]
      if (theta < 0.0f) theta += two_pi;
      const float nt = orientation_scale * theta;
      // floor(v - 0.5) for v in [-2.5, 2.5) via truncation of a positive number.
      const int binx = static_cast<int>(nx + 2.5f) - 3;
      const int biny = static_cast<int>(ny + 2.5f) - 3;
      const int bint = static_cast<int>(nt);
      const float rbinx = nx - (binx + 0.5f);
      const float rbiny = ny - (biny + 0.5f);
      const float rbint = nt - bint;
      const float w = window_x[dxi + max_radius] * wrow * mod;
      const float wx[2] = {(1 - rbinx), rbinx};
      const float wy[2] = {(1 - rbiny), rbiny};
      const int t0 = bint & (kNBO - 1);
      const int t1 = (bint + 1) & (kNBO - 1);
      for (int b = 0; b < 2; ++b) {
        float* cells = acc[biny + 3 + b][binx + 3];
        const float wyb = w * wy[b];
        const float w0 = wyb * wx[0];
        const float w1 = wyb * wx[1];
        cells[t0] += w0 * (1 - rbint);
        cells[t1] += w0 * rbint;
        cells[kNBO + t0] += w1 * (1 - rbint);
        cells[kNBO + t1] += w1 * rbint;
      }
    }
  }
  // Keep the in-range bins, VLFeat layout: t + 8 x + 32 y with x, y in [0, 3].
  for (int by = 0; by < kNBP; ++by)
    for (int bx = 0; bx < kNBP; ++bx)
      for (int t = 0; t < kNBO; ++t)
        descriptor[t + kNBO * bx + kNBO * kNBP * by] = acc[by + 1][bx + 1][t];

  NormalizeL2WithEpsilon(descriptor);
  for (int i = 0; i < 128; ++i)
    descriptor[i] = std::min(descriptor[i], SiftConstants::kDescriptorClamp);
  NormalizeL2WithEpsilon(descriptor);
}

void QuantizeDescriptor(const float descriptor[128], SiftNormalization normalization,
                        uint8_t out[128]) {
  float v[128];
  std::memcpy(v, descriptor, sizeof(v));
  if (normalization == SiftNormalization::kL2) {
    float norm = 0.0f;
    for (float e : v) norm += e * e;
    norm = std::sqrt(norm);
    if (norm > 0)
      for (float& e : v) e /= norm;
  } else {
    float l1 = 0.0f;
    for (float e : v) l1 += std::fabs(e);
    if (l1 > 0)
      for (float& e : v) e = std::sqrt(e / l1);
  }
  // VLFeat's orientation bin t of each cell goes to (8 - t) mod 8 (COLMAP's
  // TransformVLFeatToUBCFeatureDescriptors); cells keep their order.
  for (int cell = 0; cell < 16; ++cell) {
    for (int t = 0; t < 8; ++t) {
      const float scaled = std::round(SiftConstants::kQuantisationScale * v[8 * cell + t]);
      out[8 * cell + (8 - t) % 8] = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, scaled)));
    }
  }
}

}  // namespace edgesfm
