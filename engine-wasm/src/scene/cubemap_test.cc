#include "scene/cubemap.h"

#include <gtest/gtest.h>

#include "scene/camera_models.h"

namespace edgesfm {
namespace {

TEST(Cubemap, FacesAreRotationsLookingAlongTheSixAxes) {
  const Eigen::Vector3d axes[kNumCubemapFaces] = {{0, 0, 1},  {1, 0, 0},  {0, 0, -1},
                                                  {-1, 0, 0}, {0, -1, 0}, {0, 1, 0}};
  for (int f = 0; f < kNumCubemapFaces; ++f) {
    const Eigen::Matrix3d& r = CubemapRigFromFace(f);
    EXPECT_TRUE((r.transpose() * r).isApprox(Eigen::Matrix3d::Identity())) << f;
    EXPECT_DOUBLE_EQ(r.determinant(), 1.0) << f;
    EXPECT_TRUE(r.col(2).isApprox(axes[f])) << f;
    EXPECT_EQ(CubemapFaceOfRay(axes[f]), f);
    // face_from_rig takes the face's own axis to its optical axis.
    EXPECT_TRUE((CubemapFaceFromRig(f) * axes[f]).isApprox(Eigen::Vector3d::UnitZ())) << f;
  }
  EXPECT_TRUE(CubemapRigFromFace(0).isIdentity());
}

TEST(Cubemap, ImageAxesFollowTheViewer) {
  // Turning right, the right face's image x points back; looking up, its image bottom is front.
  EXPECT_TRUE(CubemapRigFromFace(1).col(0).isApprox(Eigen::Vector3d(0, 0, -1)));
  EXPECT_TRUE(CubemapRigFromFace(4).col(1).isApprox(Eigen::Vector3d(0, 0, 1)));
  EXPECT_TRUE(CubemapRigFromFace(5).col(1).isApprox(Eigen::Vector3d(0, 0, -1)));
  // Every side face keeps the panorama's down as its image down.
  for (int f = 0; f < 4; ++f)
    EXPECT_TRUE(CubemapRigFromFace(f).col(1).isApprox(Eigen::Vector3d::UnitY())) << f;
}

TEST(Cubemap, FacesTileTheSphereAtTheirEdges) {
  // A face pixel's ray through the face intrinsics lies on that face (or on its edge).
  const int size = 64;
  const CubemapFaceIntrinsics k = CubemapIntrinsics(size);
  for (int f = 0; f < kNumCubemapFaces; ++f) {
    for (int y : {0, 17, 63}) {
      for (int x : {0, 31, 63}) {
        const Eigen::Vector3d ray =
            CubemapRigFromFace(f) * Eigen::Vector3d((x + 0.5 - k.principal) / k.focal,
                                                    (y + 0.5 - k.principal) / k.focal, 1);
        EXPECT_EQ(CubemapFaceOfRay(ray), f) << f << " " << x << " " << y;
      }
    }
  }
}

TEST(Cubemap, FrontIsThePanoramaCentre) {
  double x = 0, y = 0;
  ASSERT_TRUE(SphericalCameraModel::ImgFromCam<double>(nullptr, 0, 0, 1, 2048, 1024, &x, &y));
  EXPECT_DOUBLE_EQ(x, 1024);
  EXPECT_DOUBLE_EQ(y, 512);
  const Eigen::Vector3d right = CubemapRigFromFace(1).col(2);
  ASSERT_TRUE(SphericalCameraModel::ImgFromCam<double>(nullptr, right.x(), right.y(), right.z(),
                                                       2048, 1024, &x, &y));
  EXPECT_DOUBLE_EQ(x, 1536);
}

}  // namespace
}  // namespace edgesfm
