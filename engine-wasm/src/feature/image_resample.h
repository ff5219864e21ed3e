// Resampling steps of the SIFT pipeline (SIFT.md sections 1-2): VLFeat's 2x
// bilinear upsampling of the first octave, its 2x subsampling between octaves,
// and the area-aware tent downscaling applied to images larger than
// `max_image_size` (COLMAP rescales with FreeImage's bilinear filter).
#pragma once

#include <cstdint>
#include <vector>

namespace edgesfm {

// dst (2w x 2h) from src (w x h): u[2i] = s[i], u[2i+1] = (s[i] + s[i+1]) / 2,
// the last two samples both s[w-1]; along x first, then along y.
void Upsample2x(const float* src, int width, int height, float* dst, std::vector<float>* scratch);

// dst ((w/2) x (h/2), truncated) with dst[i, j] = src[2i, 2j].
void Subsample2x(const float* src, int width, int height, float* dst);

// Resamples to (new_width x new_height) < (width x height) with a tent filter
// whose support is widened by the reduction factor in each axis (x then y).
// Sample centres map as (i + 0.5) * width / new_width - 0.5.
void DownscaleTent(const float* src, int width, int height, float* dst, int new_width,
                   int new_height);

}  // namespace edgesfm
