// Flat C API of the panorama projections (image/projection.h) and the cubemap rig
// (scene/cubemap.h). Images are packed RGBA (one uint32 per pixel); the caller
// allocates both the input and the output in the wasm heap.
#include <cstdint>

#include "bindings/export.h"
#include "image/projection.h"
#include "scene/cubemap.h"

namespace {

edgesfm::ProjectionSampling SamplingOf(int sampling) {
  return static_cast<edgesfm::ProjectionSampling>(sampling < 0 || sampling > 3 ? 1 : sampling);
}

}  // namespace

// intrinsics (float64[4]): fx, fy, cx, cy; pano_from_cam (float64[9], row-major).
EDGESFM_EXPORT void edgesfm_projection_perspective(const uint32_t* pano, int pano_width, int pano_height,
                                                   int width, int height, const double* intrinsics,
                                                   const double* pano_from_cam, int sampling, uint32_t* out) {
  edgesfm::PerspectiveView view;
  view.width = width;
  view.height = height;
  view.fx = static_cast<float>(intrinsics[0]);
  view.fy = static_cast<float>(intrinsics[1]);
  view.cx = static_cast<float>(intrinsics[2]);
  view.cy = static_cast<float>(intrinsics[3]);
  for (int i = 0; i < 9; ++i) view.pano_from_cam[i] = static_cast<float>(pano_from_cam[i]);
  edgesfm::RenderPerspectiveFromEquirectangular(pano, pano_width, pano_height, view, SamplingOf(sampling), out);
}

EDGESFM_EXPORT void edgesfm_projection_cubemap_face(const uint32_t* pano, int pano_width, int pano_height,
                                                    int face, int face_size, int sampling, uint32_t* out) {
  edgesfm::RenderPerspectiveFromEquirectangular(pano, pano_width, pano_height, edgesfm::CubemapFaceView(face, face_size),
                                                SamplingOf(sampling), out);
}

EDGESFM_EXPORT void edgesfm_projection_equirectangular(const uint32_t* faces, int face_size, int width, int height,
                                                       int sampling, uint32_t* out) {
  edgesfm::RenderEquirectangularFromCubemap(faces, face_size, width, height, SamplingOf(sampling), out);
}

// rig_from_face of `face` into out (float64[9], row-major).
EDGESFM_EXPORT void edgesfm_cubemap_rig_from_face(int face, double* out) {
  const Eigen::Matrix3d& r = edgesfm::CubemapRigFromFace(face);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) out[3 * i + j] = r(i, j);
  }
}
