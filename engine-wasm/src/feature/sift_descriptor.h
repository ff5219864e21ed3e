// Orientation assignment and the 128-d SIFT descriptor (Lowe 2004, sec. 5-6),
// exactly as VLFeat computes them (vl_sift_calc_keypoint_orientations,
// vl_sift_calc_keypoint_descriptor), plus COLMAP's normalisation, quantisation
// and "UBC" bin order. SIFT.md sections 4-6.
#pragma once

#include <cstdint>
#include <vector>

#include "feature/sift_detector.h"
#include "feature/sift_options.h"

namespace edgesfm {

// Gradient magnitude and angle ([0, 2 pi], VLFeat's fast atan2) of one
// Gaussian level, interleaved: grad[2 i] = magnitude, grad[2 i + 1] = angle.
void ComputeGradients(const float* level, int width, int height, std::vector<float>* grad);

// Up to 4 orientations (radians) in histogram bin order; returns their count.
int ComputeOrientations(const float* grad, int width, int height, const SiftDetection& kp,
                        double angles[4]);

// The float descriptor in VLFeat's layout (index t + 8 x + 32 y), L2-normalised,
// clamped at 0.2 and renormalised; all zeros when the keypoint is too close to
// the border (see SIFT.md section 6).
void ComputeDescriptor(const float* grad, int width, int height, const SiftDetection& kp,
                       double angle, float descriptor[128]);

// COLMAP's final step: L2 or L1-root normalisation, min(255, round(512 v)), and
// the reorder from VLFeat's orientation bins to the UBC/SiftGPU convention.
void QuantizeDescriptor(const float descriptor[128], SiftNormalization normalization,
                        uint8_t out[128]);

}  // namespace edgesfm
