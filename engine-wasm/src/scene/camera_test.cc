#include "scene/camera.h"

#include <gtest/gtest.h>

namespace edgesfm {
namespace {

TEST(Camera, DefaultsFromFocalLengthAndSize) {
  const Camera camera = Camera::CreateFromModelName(1, "SIMPLE_RADIAL", 1200, 1600, 1000);
  EXPECT_EQ(camera.model_id, CameraModelId::kSimpleRadial);
  EXPECT_EQ(camera.params, (std::vector<double>{1200, 800, 500, 0}));
  EXPECT_EQ(camera.ModelName(), "SIMPLE_RADIAL");
  EXPECT_TRUE(camera.VerifyParams());
  EXPECT_DOUBLE_EQ(camera.MeanFocalLength(), 1200);
  EXPECT_DOUBLE_EQ(camera.PrincipalPointY(), 500);
}

TEST(Camera, AccessorsFollowTheLayout) {
  Camera camera = Camera::CreateFromModelId(2, CameraModelId::kPinhole, 1000, 640, 480);
  camera.params[1] = 1100;
  EXPECT_DOUBLE_EQ(camera.FocalLengthX(), 1000);
  EXPECT_DOUBLE_EQ(camera.FocalLengthY(), 1100);
  EXPECT_DOUBLE_EQ(camera.MeanFocalLength(), 1050);
  camera.SetFocalLength(900);
  camera.SetPrincipalPoint(300, 250);
  EXPECT_EQ(camera.params, (std::vector<double>{900, 900, 300, 250}));
  Eigen::Matrix3d K;
  K << 900, 0, 300, 0, 900, 250, 0, 0, 1;
  EXPECT_EQ(camera.CalibrationMatrix(), K);
}

TEST(Camera, ProjectsAndUnprojects) {
  Camera camera = Camera::CreateFromModelId(1, CameraModelId::kRadial, 1000, 1000, 800);
  camera.params[3] = -0.1;
  camera.params[4] = 0.01;
  const Eigen::Vector3d point(0.3, -0.2, 2.0);
  Eigen::Vector2d xy;
  ASSERT_TRUE(camera.ImgFromCam(point, &xy));
  const Eigen::Vector3d ray = camera.CamFromImg(xy);
  EXPECT_LT((ray - point / point.z()).norm(), 1e-9);
  EXPECT_FALSE(camera.ImgFromCam(-point, &xy));
  EXPECT_NEAR(camera.CamFromImgThreshold(2), 0.002, 1e-12);
}

TEST(Camera, BogusParams) {
  Camera camera = Camera::CreateFromModelId(1, CameraModelId::kSimpleRadial, 1000, 1000, 800);
  EXPECT_FALSE(camera.HasBogusParams(0.1, 10, 1));
  camera.params[0] = 20000;  // focal 20x the image size
  EXPECT_TRUE(camera.HasBogusParams(0.1, 10, 1));
  camera.params[0] = 1000;
  camera.params[1] = -5;  // principal point outside
  EXPECT_TRUE(camera.HasBogusParams(0.1, 10, 1));
  camera.params[1] = 500;
  camera.params[3] = 3;  // absurd distortion
  EXPECT_TRUE(camera.HasBogusParams(0.1, 10, 1));
}

}  // namespace
}  // namespace edgesfm
