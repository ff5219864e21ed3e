// Flat C API of the panorama projections (image/projection.h) and the cubemap rig
// (scene/cubemap.h). Images are packed RGBA (one uint32 per pixel); the caller
// allocates both the input and the output in the wasm heap.
#include <cstdint>
#include <string>

#include "bindings/export.h"
#include "bindings/guard.h"
#include "bindings/input_checks.h"
#include "image/projection.h"
#include "scene/cubemap.h"

namespace {

edgesfm::ProjectionSampling SamplingOf(int sampling) {
  return static_cast<edgesfm::ProjectionSampling>(sampling < 0 || sampling > 3 ? 1 : sampling);
}

void RequireImage(const void* pixels, int width, int height, const char* what) {
  edgesfm::bindings::Require(pixels != nullptr && width > 0 && height > 0,
                             std::string("projection: ") + what + " is empty");
}

void RequireFace(int face) {
  edgesfm::bindings::Require(face >= 0 && face < 6,
                             "projection: cubemap face " + std::to_string(face) + " is not 0..5");
}

}  // namespace

// Every projection returns 0, or -1 on invalid input (edgesfm_last_error names the rule).
// intrinsics (float64[4]): fx, fy, cx, cy; pano_from_cam (float64[9], row-major).
EDGESFM_EXPORT int edgesfm_projection_perspective(const uint32_t* pano, int pano_width,
                                                  int pano_height, int width, int height,
                                                  const double* intrinsics,
                                                  const double* pano_from_cam, int sampling,
                                                  uint32_t* out) {
  return edgesfm::bindings::Guarded(-1, [&] {
    RequireImage(pano, pano_width, pano_height, "the panorama");
    RequireImage(out, width, height, "the view");
    edgesfm::bindings::RequireFinite(intrinsics, 4, "projection: the view's intrinsics");
    edgesfm::bindings::Require(intrinsics[0] > 0 && intrinsics[1] > 0,
                               "projection: the view's focal lengths must be positive");
    edgesfm::bindings::RequireFinite(pano_from_cam, 9, "projection: the view's rotation");
    edgesfm::PerspectiveView view;
    view.width = width;
    view.height = height;
    view.fx = static_cast<float>(intrinsics[0]);
    view.fy = static_cast<float>(intrinsics[1]);
    view.cx = static_cast<float>(intrinsics[2]);
    view.cy = static_cast<float>(intrinsics[3]);
    for (int i = 0; i < 9; ++i) view.pano_from_cam[i] = static_cast<float>(pano_from_cam[i]);
    edgesfm::RenderPerspectiveFromEquirectangular(pano, pano_width, pano_height, view,
                                                  SamplingOf(sampling), out);
    return 0;
  });
}

EDGESFM_EXPORT int edgesfm_projection_cubemap_face(const uint32_t* pano, int pano_width,
                                                   int pano_height, int face, int face_size,
                                                   int sampling, uint32_t* out) {
  return edgesfm::bindings::Guarded(-1, [&] {
    RequireImage(pano, pano_width, pano_height, "the panorama");
    RequireImage(out, face_size, face_size, "the face");
    RequireFace(face);
    edgesfm::RenderPerspectiveFromEquirectangular(pano, pano_width, pano_height,
                                                  edgesfm::CubemapFaceView(face, face_size),
                                                  SamplingOf(sampling), out);
    return 0;
  });
}

EDGESFM_EXPORT int edgesfm_projection_equirectangular(const uint32_t* faces, int face_size,
                                                      int width, int height, int sampling,
                                                      uint32_t* out) {
  return edgesfm::bindings::Guarded(-1, [&] {
    RequireImage(faces, face_size, face_size, "the cubemap");
    RequireImage(out, width, height, "the panorama");
    edgesfm::RenderEquirectangularFromCubemap(faces, face_size, width, height, SamplingOf(sampling),
                                              out);
    return 0;
  });
}

// rig_from_face of `face` into out (float64[9], row-major); -1 for a face outside 0..5.
EDGESFM_EXPORT int edgesfm_cubemap_rig_from_face(int face, double* out) {
  return edgesfm::bindings::Guarded(-1, [&] {
    RequireFace(face);
    const Eigen::Matrix3d& r = edgesfm::CubemapRigFromFace(face);
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) out[3 * i + j] = r(i, j);
    }
    return 0;
  });
}
