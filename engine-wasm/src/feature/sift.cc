#include "feature/sift.h"

#include <algorithm>
#include <cmath>

#include "feature/image_resample.h"
#include "feature/sift_descriptor.h"

namespace edgesfm {

bool ValidateSiftOptions(const SiftExtractionOptions& o) {
  return o.max_image_size > 0 && o.max_num_features > 0 && o.first_octave >= -1 &&
         o.first_octave <= 4 && o.num_octaves > 0 && o.octave_resolution > 0 &&
         o.peak_threshold > 0 && o.edge_threshold > 0 && o.max_num_orientations > 0 &&
         (o.normalization == SiftNormalization::kL2 ||
          o.normalization == SiftNormalization::kL1Root);
}

namespace {

int OctaveSize(int size, int octave) { return octave < 0 ? size << -octave : size >> octave; }

// COLMAP's size budget: the larger side becomes max_image_size, the other is
// truncated (static_cast<int>) after scaling.
bool NeedsDownscale(int width, int height, const SiftExtractionOptions& options, int* new_width,
                    int* new_height) {
  const int max_side = std::max(width, height);
  if (max_side <= options.max_image_size) return false;
  const double scale = static_cast<double>(options.max_image_size) / max_side;
  *new_width = std::max(1, static_cast<int>(width * scale));
  *new_height = std::max(1, static_cast<int>(height * scale));
  return true;
}

// Back to the original frame (COLMAP's FeatureKeypoint::Rescale): positions scale
// per axis (they are pixel-edge based, centre at +0.5), sigma by the mean factor.
void RescaleKeypoints(int width, int height, int resized_width, int resized_height,
                      std::vector<SiftKeypoint>* keypoints) {
  const float sx = static_cast<float>(width) / resized_width;
  const float sy = static_cast<float>(height) / resized_height;
  for (SiftKeypoint& kp : *keypoints) {
    kp.x *= sx;
    kp.y *= sy;
    kp.scale *= 0.5f * (sx + sy);
  }
}

void Subtract(const float* a, const float* b, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = b[i] - a[i];
}

}  // namespace

bool SiftExtractor::ExtractGray8(const uint8_t* gray, int width, int height,
                                 const SiftExtractionOptions& options, SiftFeatures* features) {
  if (gray == nullptr || width <= 0 || height <= 0) return false;
  const size_t n = static_cast<size_t>(width) * height;
  std::vector<float> intensity(n);
  int new_width = width, new_height = height;
  if (!NeedsDownscale(width, height, options, &new_width, &new_height)) {
    for (size_t i = 0; i < n; ++i) intensity[i] = gray[i] / 255.0f;
    return Extract(intensity.data(), width, height, options, features);
  }
  // COLMAP resizes the 8-bit bitmap; the result is 8-bit again.
  for (size_t i = 0; i < n; ++i) intensity[i] = gray[i];
  std::vector<float> resized(static_cast<size_t>(new_width) * new_height);
  DownscaleTent(intensity.data(), width, height, resized.data(), new_width, new_height);
  for (float& v : resized) v = std::min(255.0f, std::max(0.0f, std::round(v))) / 255.0f;
  SiftExtractionOptions inner = options;
  inner.max_image_size = std::max(new_width, new_height);
  if (!Extract(resized.data(), new_width, new_height, inner, features)) return false;
  RescaleKeypoints(width, height, new_width, new_height, &features->keypoints);
  return true;
}

bool SiftExtractor::Extract(const float* intensity, int width, int height,
                            const SiftExtractionOptions& options, SiftFeatures* features) {
  if (!ValidateSiftOptions(options) || intensity == nullptr || width <= 0 || height <= 0)
    return false;
  features->keypoints.clear();
  features->descriptors.clear();

  // Images above the size budget are resampled in float here (the 8-bit entry
  // point resizes in 8 bits first, as COLMAP).
  const int original_width = width, original_height = height;
  int new_width = width, new_height = height;
  std::vector<float> resized;
  if (NeedsDownscale(width, height, options, &new_width, &new_height)) {
    resized.resize(static_cast<size_t>(new_width) * new_height);
    DownscaleTent(intensity, width, height, resized.data(), new_width, new_height);
    intensity = resized.data();
    width = new_width;
    height = new_height;
  }

  all_keypoints_.clear();
  all_descriptors_.clear();
  groups_.clear();
  previous_level_ = -1000;

  const int o_min = options.first_octave;
  const int S = options.octave_resolution;
  const double sigma0 = SiftConstants::kBaseSigmaLowe * std::pow(2.0, 1.0 / S);
  const double sigmak = std::pow(2.0, 1.0 / S);
  int w = OctaveSize(width, o_min);
  int h = OctaveSize(height, o_min);
  if (w < 3 || h < 3) {
    return true;  // no octave can hold an extremum
  }

  // Level -1 of the first octave.
  const size_t n = static_cast<size_t>(w) * h;
  base_.resize(n);
  if (o_min < 0) {
    Upsample2x(intensity, width, height, base_.data(), &upsample_scratch_);
  } else if (o_min > 0) {
    // VLFeat's copy_and_downsample by 2^o_min: every 2^o_min-th sample.
    const int step = 1 << o_min;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        base_[static_cast<size_t>(y) * w + x] =
            intensity[static_cast<size_t>(y * step) * width + x * step];
  } else {
    std::copy(intensity, intensity + n, base_.begin());
  }
  {
    const double sa = sigma0 * std::pow(sigmak, SiftConstants::kFirstLevel);
    const double sb = SiftConstants::kNominalSigma * std::pow(2.0, -o_min);
    if (sa > sb) {
      const GaussianKernel k = MakeGaussianKernel(std::sqrt(sa * sa - sb * sb));
      GaussianBlur(base_.data(), base_.data(), w, h, k, &blur_scratch_);
    }
  }

  for (int o = o_min; o < o_min + options.num_octaves; ++o) {
    w = OctaveSize(width, o);
    h = OctaveSize(height, o);
    if (w < 3 || h < 3) break;
    ProcessOctave(o, w, h, options);
    // The next octave's level -1 is level S-1 subsampled (same sigma, no blur).
    std::swap(base_, next_base_);
  }

  // Feature budget (COLMAP 3.8): whole level groups from the coarsest down,
  // until the running count of detections first exceeds max_num_features.
  size_t first_group = 0;
  size_t running = 0;
  for (size_t g = groups_.size(); g-- > 0;) {
    running += groups_[g].num_detections;
    if (running > static_cast<size_t>(options.max_num_features)) {
      first_group = g;
      break;
    }
  }
  const size_t first_feature = groups_.empty() ? 0 : groups_[first_group].first_feature;
  features->keypoints.assign(all_keypoints_.begin() + first_feature, all_keypoints_.end());
  features->descriptors.assign(all_descriptors_.begin() + 128 * first_feature,
                               all_descriptors_.end());
  if (width != original_width || height != original_height) {
    RescaleKeypoints(original_width, original_height, width, height, &features->keypoints);
  }
  return true;
}

void SiftExtractor::ProcessOctave(int octave, int w, int h, const SiftExtractionOptions& options) {
  const int S = options.octave_resolution;
  const double sigma0 = SiftConstants::kBaseSigmaLowe * std::pow(2.0, 1.0 / S);
  const double sigmak = std::pow(2.0, 1.0 / S);
  const double dsigma0 = sigma0 * std::sqrt(1.0 - 1.0 / (sigmak * sigmak));
  const size_t n = static_cast<size_t>(w) * h;
  previous_level_ = -1000;  // groups never span octaves
  const float xper = static_cast<float>(std::pow(2.0, octave));
  for (auto& g : gauss_)
    if (g.size() < n) g.resize(n);
  for (auto& d : dog_)
    if (d.size() < n) d.resize(n);

  // Gaussian level s lives in gauss_[(s + 1) % 3], DoG level s in dog_[(s + 1) % 3].
  auto G = [this](int s) { return gauss_[(s + 3 + 1) % 3].data(); };
  auto D = [this](int s) { return dog_[(s + 3 + 1) % 3].data(); };
  auto blur_to = [&](int s) {
    const GaussianKernel k = MakeGaussianKernel(dsigma0 * std::pow(sigmak, s));
    GaussianBlur(G(s - 1), G(s), w, h, k, &blur_scratch_);
  };

  std::copy(base_.begin(), base_.begin() + n, G(-1));
  blur_to(0);
  Subtract(G(-1), G(0), D(-1), n);
  blur_to(1);
  Subtract(G(0), G(1), D(0), n);
  if (S - 1 == 0 || S - 1 == 1) {  // tiny S: level S-1 exists already
    next_base_.resize(static_cast<size_t>(w / 2) * (h / 2));
    Subsample2x(G(S - 1), w, h, next_base_.data());
  }

  float raw[128];
  for (int s = 0; s <= S - 1; ++s) {
    blur_to(s + 2);
    Subtract(G(s + 1), G(s + 2), D(s + 1), n);
    if (s + 2 == S - 1) {
      next_base_.resize(static_cast<size_t>(w / 2) * (h / 2));
      Subsample2x(G(S - 1), w, h, next_base_.data());
    }

    detections_.clear();
    DetectDogExtrema(DogLevels{D(s - 1), D(s), D(s + 1), w, h}, s, options, &detections_);
    if (detections_.empty()) continue;

    ComputeGradients(G(s), w, h, &grad_);

    // COLMAP's level groups: one per (octave, DoG level) holding detections.
    if (s != previous_level_) {
      LevelGroup group;
      group.first_feature = all_keypoints_.size();
      groups_.push_back(group);
      previous_level_ = s;
    }
    LevelGroup& group = groups_.back();
    for (const SiftDetection& det : detections_) {
      group.num_detections += 1;
      double angles[4];
      int num_angles;
      if (options.upright) {
        angles[0] = 0.0;
        num_angles = 1;
      } else {
        num_angles = ComputeOrientations(grad_.data(), w, h, det, angles);
      }
      num_angles = std::min(num_angles, options.max_num_orientations);
      for (int a = 0; a < num_angles; ++a) {
        SiftKeypoint kp;
        kp.x = det.x * xper + 0.5f;
        kp.y = det.y * xper + 0.5f;
        kp.scale = det.sigma * xper;
        kp.orientation = static_cast<float>(angles[a]);
        all_keypoints_.push_back(kp);
        ComputeDescriptor(grad_.data(), w, h, det, angles[a], raw);
        const size_t at = all_descriptors_.size();
        all_descriptors_.resize(at + 128);
        QuantizeDescriptor(raw, options.normalization, all_descriptors_.data() + at);
        group.num_features += 1;
      }
    }
  }
}

}  // namespace edgesfm
