// The cubemap rig of a spherical (equirectangular) camera, spec 4.14 rule 7: six
// pinhole faces with a 90 degree field of view sharing the panorama's centre, in the
// order front, right, back, left, up, down, each with OpenCV image axes (x right,
// y down, z forward). The rig frame is the panorama's camera frame (SPHERICAL in
// scene/camera_models.h: +z is the panorama's centre column, +y points down), and
// front is the reference sensor (identity). The same table is protocol/cubemap.ts
// (the runner's WGSL kernels and snapshot files); ts/projection.test.ts checks that
// the two agree.
#pragma once

#include <Eigen/Core>
#include <array>

#include "geometry/rigid3.h"

namespace edgesfm {

constexpr int kNumCubemapFaces = 6;

enum class CubemapFace : int { kFront = 0, kRight = 1, kBack = 2, kLeft = 3, kUp = 4, kDown = 5 };

// rig_from_face rotation of a face: its columns are the face camera's x, y and z axes
// in the rig frame. Integer entries, exact.
const Eigen::Matrix3d& CubemapRigFromFace(int face);

// face_from_rig as a rigid transform (the face cameras share the rig's centre).
Rigid3d CubemapFaceFromRig(int face);

// The face whose view contains the ray (the axis of its largest |component|; ties go
// to the earlier face in the order above). The ray need not be normalised but must not
// be zero.
int CubemapFaceOfRay(const Eigen::Vector3d& ray_in_rig);

// A face's pinhole intrinsics for `face_size` pixels: focal length face_size / 2 and
// principal point (face_size / 2, face_size / 2), the pixel-centre convention of
// COLMAP (the top-left pixel's centre is (0.5, 0.5)), so the six faces tile the sphere.
struct CubemapFaceIntrinsics {
  double focal = 0;
  double principal = 0;
};
CubemapFaceIntrinsics CubemapIntrinsics(int face_size);

}  // namespace edgesfm
