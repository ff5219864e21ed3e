// Parameters of SIFT extraction and matching, with COLMAP 3.8's defaults
// (colmap/src/feature/sift.h: SiftExtractionOptions, SiftMatchingOptions).
//
// The algorithm these parameters drive is specified in feature/SIFT.md (the
// contract the WGSL twin in shaders/ reproduces): Lowe, "Distinctive Image
// Features from Scale-Invariant Keypoints", IJCV 2004, as implemented by
// VLFeat's vl/sift.c (Vedaldi & Fulkerson) and configured by COLMAP; RootSIFT
// from Arandjelovic & Zisserman, "Three things everyone should know to improve
// object retrieval", CVPR 2012.
#pragma once

#include <cmath>

namespace edgesfm {

enum class SiftNormalization {
  // L2-normalised, clamped at 0.2, renormalised (Lowe 2004, sec. 6.1).
  kL2 = 0,
  // The L2 descriptor above, then L1-normalised and square-rooted (RootSIFT):
  // the Euclidean distance of RootSIFT vectors is the Hellinger kernel of the
  // originals. COLMAP's default.
  kL1Root = 1,
};

struct SiftExtractionOptions {
  // Images whose larger side exceeds this are downscaled first (so the larger
  // side becomes exactly this, the other side truncated as COLMAP does);
  // keypoints are reported in the original image's pixel frame.
  int max_image_size = 3200;
  // Feature budget. Whole DoG levels are kept from the coarsest down until the
  // number of detected keypoints (before orientation duplication) first
  // exceeds it; that last level is kept whole. See SIFT.md "Feature budget".
  int max_num_features = 8192;
  // Index of the first octave: -1 doubles the image first (bilinear).
  int first_octave = -1;
  // Number of octaves computed, starting at `first_octave`.
  int num_octaves = 4;
  // DoG levels per octave at which extrema are searched (S in Lowe/VLFeat).
  int octave_resolution = 3;
  // Minimum |DoG| of a refined extremum, on intensities in [0, 1].
  // COLMAP: 0.02 / octave_resolution.
  double peak_threshold = 0.02 / 3.0;
  // Maximum ratio r of principal curvatures: reject when
  // tr(H)^2 / det(H) >= (r + 1)^2 / r (Lowe 2004, sec. 4.1).
  double edge_threshold = 10.0;
  // At most this many orientations per keypoint: the first local maxima of the
  // smoothed histogram in bin order (VLFeat order), not the strongest ones.
  int max_num_orientations = 2;
  // Skip orientation assignment (angle 0 for every keypoint).
  bool upright = false;
  SiftNormalization normalization = SiftNormalization::kL1Root;
};

// Constants of the VLFeat SIFT filter (vl_sift_new) that COLMAP leaves at their
// defaults. Not options: the WGSL twin hard-codes them as well.
struct SiftConstants {
  // Nominal blur of the input image, in input pixels.
  static constexpr double kNominalSigma = 0.5;
  // Base smoothing: sigma0 = 1.6 * 2^(1/S) (VLFeat's convention: level s of
  // octave o has sigma = sigma0 * 2^(o + s/S)).
  static constexpr double kBaseSigmaLowe = 1.6;
  // First and last Gaussian level index in an octave: s in [-1, S + 1].
  static constexpr int kFirstLevel = -1;
  // Half-width of the Gaussian kernel: ceil(4 sigma), at least 1.
  static constexpr double kGaussianTruncation = 4.0;
  // Extremum pre-test: |DoG| >= 0.8 * peak_threshold before refinement.
  static constexpr double kPeakPreThresholdFactor = 0.8;
  static constexpr int kMaxRefinementIterations = 5;
  // Orientation histogram.
  static constexpr int kOrientationBins = 36;
  static constexpr double kOrientationWindowFactor = 1.5;  // window sigma = 1.5 * sigma
  static constexpr int kOrientationSmoothingPasses = 6;    // circular [1 1 1]/3 box
  static constexpr double kOrientationPeakRatio = 0.8;     // peaks > 0.8 * max
  static constexpr int kMaxOrientationsVLFeat = 4;
  // Descriptor: 4x4 spatial bins of 3 sigma each, 8 orientation bins.
  static constexpr int kSpatialBins = 4;
  static constexpr int kOrientationBinsDescriptor = 8;
  static constexpr int kDescriptorDim = 128;
  static constexpr double kMagnification = 3.0;
  static constexpr double kDescriptorWindowSigma = 2.0;  // in bins (NBP / 2)
  static constexpr float kDescriptorClamp = 0.2f;
  static constexpr float kQuantisationScale = 512.0f;  // byte = min(255, round(512 x))
};

// COLMAP's SiftMatchingOptions (the CPU/GPU brute-force semantics).
struct SiftMatchingOptions {
  // Lowe's ratio test on normalised descriptor distances (angles):
  // reject when best >= max_ratio * second_best.
  double max_ratio = 0.8;
  // Reject when the best angle acos(dot / 512^2) exceeds this (radians).
  double max_distance = 0.7;
  // Keep a pair only if each descriptor is the other's accepted match.
  bool cross_check = true;
};

}  // namespace edgesfm
