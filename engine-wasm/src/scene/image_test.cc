#include "scene/image.h"

#include <gtest/gtest.h>

namespace edgesfm {
namespace {

TEST(Image, TracksWhichKeypointsHave3DPoints) {
  Image image;
  image.SetPoints2D(std::vector<Eigen::Vector2d>{{1, 2}, {3, 4}, {5, 6}});
  EXPECT_EQ(image.NumPoints2D(), 3u);
  EXPECT_EQ(image.NumPoints3D(), 0u);
  image.SetPoint3DForPoint2D(1, 42);
  image.SetPoint3DForPoint2D(1, 43);  // relinking does not count twice
  image.SetPoint3DForPoint2D(2, 44);
  EXPECT_EQ(image.NumPoints3D(), 2u);
  EXPECT_TRUE(image.HasPoint3D(43));
  EXPECT_FALSE(image.HasPoint3D(42));
  image.ResetPoint3DForPoint2D(1);
  image.ResetPoint3DForPoint2D(1);
  EXPECT_EQ(image.NumPoints3D(), 1u);
  EXPECT_FALSE(image.Point2DAt(1).HasPoint3D());
  EXPECT_EQ(image.Point2DAt(2).xy, Eigen::Vector2d(5, 6));
}

TEST(Image, PoseHelpers) {
  Image image;
  image.cam_from_world = Rigid3d(Eigen::Quaterniond::Identity(), Eigen::Vector3d(0, 0, -2));
  EXPECT_EQ(image.ProjectionCenter(), Eigen::Vector3d(0, 0, 2));
  EXPECT_EQ(image.ViewingDirection(), Eigen::Vector3d(0, 0, 1));
}

}  // namespace
}  // namespace edgesfm
