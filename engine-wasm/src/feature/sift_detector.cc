#include "feature/sift_detector.h"

#include <cmath>

namespace edgesfm {

namespace {

// Strict 3x3x3 extremum test of the sample at `p` (index in the centre level).
inline bool IsExtremum(const DogLevels& d, size_t p, float pre_threshold) {
  const float v = d.centre[p];
  const size_t w = static_cast<size_t>(d.width);
  const size_t offsets[8] = {p - w - 1, p - w,     p - w + 1, p - 1,
                             p + 1,     p + w - 1, p + w,     p + w + 1};
  if (v >= pre_threshold) {
    for (size_t q : offsets)
      if (!(v > d.centre[q])) return false;
    if (!(v > d.below[p]) || !(v > d.above[p])) return false;
    for (size_t q : offsets)
      if (!(v > d.below[q]) || !(v > d.above[q])) return false;
    return true;
  }
  if (v <= -pre_threshold) {
    for (size_t q : offsets)
      if (!(v < d.centre[q])) return false;
    if (!(v < d.below[p]) || !(v < d.above[p])) return false;
    for (size_t q : offsets)
      if (!(v < d.below[q]) || !(v < d.above[q])) return false;
    return true;
  }
  return false;
}

// Quadratic fit around (x, y) of the centre level, moving by whole pixels while
// the offset exceeds 0.6 (at most 5 times), then the acceptance tests.
bool Refine(const DogLevels& d, int x, int y, int level, const SiftExtractionOptions& options,
            SiftDetection* out) {
  const int w = d.width;
  const int h = d.height;
  const size_t xo = 1;
  const size_t yo = static_cast<size_t>(w);
  double Dx = 0, Dy = 0, Ds = 0, Dxx = 0, Dyy = 0, Dss = 0, Dxy = 0, Dxs = 0, Dys = 0;
  double b[3] = {0, 0, 0};
  double value = 0;
  int dx = 0;
  int dy = 0;
  for (int iter = 0; iter < SiftConstants::kMaxRefinementIterations; ++iter) {
    x += dx;
    y += dy;
    const size_t p = static_cast<size_t>(y) * yo + x;
    const float* c = d.centre;
    const float* lo = d.below;
    const float* hi = d.above;
    value = c[p];
    Dx = 0.5 * (c[p + xo] - c[p - xo]);
    Dy = 0.5 * (c[p + yo] - c[p - yo]);
    Ds = 0.5 * (hi[p] - lo[p]);
    Dxx = (c[p + xo] + c[p - xo] - 2.0 * c[p]);
    Dyy = (c[p + yo] + c[p - yo] - 2.0 * c[p]);
    Dss = (hi[p] + lo[p] - 2.0 * c[p]);
    Dxy = 0.25 * (c[p + xo + yo] + c[p - xo - yo] - c[p - xo + yo] - c[p + xo - yo]);
    Dxs = 0.25 * (hi[p + xo] + lo[p - xo] - hi[p - xo] - lo[p + xo]);
    Dys = 0.25 * (hi[p + yo] + lo[p - yo] - hi[p - yo] - lo[p + yo]);

    // A is stored column-major like VLFeat's Aat(i, j) = A[i + 3 j].
    double A[9] = {Dxx, Dxy, Dxs, Dxy, Dyy, Dys, Dxs, Dys, Dss};
    auto at = [&A](int i, int j) -> double& { return A[i + 3 * j]; };
    b[0] = -Dx;
    b[1] = -Dy;
    b[2] = -Ds;
    // Gaussian elimination with partial pivoting; a singular system gives b = 0.
    for (int j = 0; j < 3; ++j) {
      double max_a = 0;
      double max_abs = 0;
      int max_i = -1;
      for (int i = j; i < 3; ++i) {
        const double a = at(i, j);
        if (std::fabs(a) > max_abs) {
          max_a = a;
          max_abs = std::fabs(a);
          max_i = i;
        }
      }
      if (max_abs < 1e-10f) {
        b[0] = b[1] = b[2] = 0;
        break;
      }
      const int i = max_i;
      for (int jj = j; jj < 3; ++jj) {
        const double tmp = at(i, jj);
        at(i, jj) = at(j, jj);
        at(j, jj) = tmp;
        at(j, jj) /= max_a;
      }
      const double tmp = b[j];
      b[j] = b[i];
      b[i] = tmp;
      b[j] /= max_a;
      for (int ii = j + 1; ii < 3; ++ii) {
        const double f = at(ii, j);
        for (int jj = j; jj < 3; ++jj) at(ii, jj) -= f * at(j, jj);
        b[ii] -= f * b[j];
      }
    }
    for (int i = 2; i > 0; --i) {
      const double f = b[i];
      for (int ii = i - 1; ii >= 0; --ii) b[ii] -= f * at(ii, i);
    }

    dx = ((b[0] > 0.6 && x < w - 2) ? 1 : 0) + ((b[0] < -0.6 && x > 1) ? -1 : 0);
    dy = ((b[1] > 0.6 && y < h - 2) ? 1 : 0) + ((b[1] < -0.6 && y > 1) ? -1 : 0);
    if (dx == 0 && dy == 0) break;
  }

  const double peak = value + 0.5 * (Dx * b[0] + Dy * b[1] + Ds * b[2]);
  const double score = (Dxx + Dyy) * (Dxx + Dyy) / (Dxx * Dyy - Dxy * Dxy);
  const double xn = x + b[0];
  const double yn = y + b[1];
  const double sn = level + b[2];
  const double te = options.edge_threshold;
  const int s_min = SiftConstants::kFirstLevel;
  const int s_max = options.octave_resolution + 1;
  const bool good = std::fabs(peak) > options.peak_threshold && score < (te + 1) * (te + 1) / te &&
                    score >= 0 && std::fabs(b[0]) < 1.5 && std::fabs(b[1]) < 1.5 &&
                    std::fabs(b[2]) < 1.5 && xn >= 0 && xn <= w - 1 && yn >= 0 && yn <= h - 1 &&
                    sn >= s_min && sn <= s_max;
  if (!good) return false;
  const int S = options.octave_resolution;
  const double sigma0 = SiftConstants::kBaseSigmaLowe * std::pow(2.0, 1.0 / S);
  out->x = static_cast<float>(xn);
  out->y = static_cast<float>(yn);
  out->sigma = static_cast<float>(sigma0 * std::pow(2.0, sn / S));
  out->level = level;
  return true;
}

}  // namespace

void DetectDogExtrema(const DogLevels& dog, int level, const SiftExtractionOptions& options,
                      std::vector<SiftDetection>* detections) {
  const int w = dog.width;
  const int h = dog.height;
  if (w < 3 || h < 3) return;
  const float pre_threshold =
      static_cast<float>(SiftConstants::kPeakPreThresholdFactor * options.peak_threshold);
  for (int y = 1; y < h - 1; ++y) {
    const float* row = dog.centre + static_cast<size_t>(y) * w;
    for (int x = 1; x < w - 1; ++x) {
      const float v = row[x];
      // Cheap rejection first: most samples are below the contrast pre-test.
      if (v < pre_threshold && v > -pre_threshold) continue;
      if (!IsExtremum(dog, static_cast<size_t>(y) * w + x, pre_threshold)) continue;
      SiftDetection detection;
      if (Refine(dog, x, y, level, options, &detection)) detections->push_back(detection);
    }
  }
}

}  // namespace edgesfm
