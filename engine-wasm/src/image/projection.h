// Panorama projections (spec 4.14): equirectangular -> perspective views and cubemap
// faces, and cubemap -> equirectangular, on 8-bit RGBA images packed one pixel per
// uint32 (r | g << 8 | b << 16 | a << 24, row-major). This is the CPU twin of
// shaders/projection.wgsl: the same float (f32) arithmetic in the same order, so the
// two agree to rounding (ts/projection.test.ts and browser-runtime/gpu/projection-gpu.test.ts
// measure it).
//
// Geometry: pixel centres at +0.5 (COLMAP's convention); the panorama is SPHERICAL
// (scene/camera_models.h: column W/2 looks along +z, rows grow with +y, down); cubemap
// faces are scene/cubemap.h's. Sampling reads the panorama with wrap-around in
// longitude and continues over the poles (row -1 is row 0 half a turn away); faces are
// clamped at their edges.
//
// Kernels (no prefiltering, as OpenCV's remap): nearest; linear (bilinear); cubic (Keys,
// a = -0.5, 4 x 4 taps); lanczos (Lanczos-3, 6 x 6 taps, weights normalised per axis).
#pragma once

#include <cstdint>

namespace edgesfm {

enum class ProjectionSampling : int { kNearest = 0, kLinear = 1, kCubic = 2, kLanczos = 3 };

// A pinhole view: size, intrinsics (pixels) and its orientation in the panorama's frame
// (pano_from_cam, row-major 3 x 3; the view shares the panorama's centre).
struct PerspectiveView {
  int width = 0;
  int height = 0;
  float fx = 0, fy = 0, cx = 0, cy = 0;
  float pano_from_cam[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
};

// The view for cubemap face `face` (scene/cubemap.h) of `face_size` pixels.
PerspectiveView CubemapFaceView(int face, int face_size);

// Renders `view` from an equirectangular panorama into `out` (view.width x view.height).
void RenderPerspectiveFromEquirectangular(const uint32_t* pano, int pano_width, int pano_height,
                                          const PerspectiveView& view, ProjectionSampling sampling,
                                          uint32_t* out);

// Renders an equirectangular panorama (width x height) from six faces of face_size^2
// pixels each, stored one after another in the cubemap order.
void RenderEquirectangularFromCubemap(const uint32_t* faces, int face_size, int width, int height,
                                      ProjectionSampling sampling, uint32_t* out);

}  // namespace edgesfm
