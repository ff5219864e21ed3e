#include "bindings/guard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bindings/input_checks.h"
#include "scene/camera_models.h"

struct TwoViewResult;
extern "C" {
const char* edgesfm_last_error();
TwoViewResult* edgesfm_two_view_verify(const double*, int, const double*, int, int, const double*,
                                       int, int, int, int, const double*, int, int, int,
                                       const int32_t*, int, const double*, int);
int edgesfm_two_view_result_num_inliers(const TwoViewResult*);
void edgesfm_two_view_result_free(TwoViewResult*);
}

namespace edgesfm::bindings {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(Guarded, ReturnsTheBodysValueAndClearsTheLastError) {
  LastError() = "stale";
  EXPECT_EQ(Guarded(-1, [] { return 7; }), 7);
  EXPECT_TRUE(LastError().empty());
}

TEST(Guarded, CatchesWhatTheEngineThrowsAndKeepsTheMessage) {
  EXPECT_EQ(Guarded(-1, []() -> int { throw std::invalid_argument("camera 2: focal length 0"); }),
            -1);
  EXPECT_EQ(LastError(), "camera 2: focal length 0");
  EXPECT_EQ(Guarded(-1, []() -> int { throw std::bad_alloc(); }), -1);
  EXPECT_NE(LastError().find("out of memory"), std::string::npos);
  EXPECT_EQ(Guarded(-1, []() -> int { throw 42; }), -1);
  EXPECT_EQ(LastError(), "unknown engine error");
}

TEST(InputChecks, CamerasNeedFiniteParametersPositiveFocalLengthsAndASize) {
  const int pinhole = static_cast<int>(CameraModelId::kPinhole);
  const std::vector<double> good = {500, 500, 320, 240};
  EXPECT_NO_THROW(RequireCamera(pinhole, good.data(), good.size(), 640, 480, "camera"));
  const std::vector<double> zero_focal = {0, 500, 320, 240};
  EXPECT_THROW(RequireCamera(pinhole, zero_focal.data(), zero_focal.size(), 640, 480, "camera"),
               std::invalid_argument);
  const std::vector<double> nan = {500, kNaN, 320, 240};
  EXPECT_THROW(RequireCamera(pinhole, nan.data(), nan.size(), 640, 480, "camera"),
               std::invalid_argument);
  EXPECT_THROW(RequireCamera(pinhole, good.data(), 3, 640, 480, "camera"), std::invalid_argument);
  EXPECT_THROW(RequireCamera(pinhole, good.data(), good.size(), 0, 480, "camera"),
               std::invalid_argument);
  EXPECT_THROW(RequireCamera(12345, good.data(), good.size(), 640, 480, "camera"),
               std::invalid_argument);
  EXPECT_NO_THROW(
      RequireCamera(static_cast<int>(CameraModelId::kSpherical), nullptr, 0, 0, 0, "panorama"));
}

TEST(InputChecks, IndexPairsStayInsideTheirArrays) {
  const std::vector<int32_t> pairs = {0, 0, 2, 1};
  EXPECT_NO_THROW(RequireIndexPairs(pairs.data(), 2, 3, 2, "matches"));
  EXPECT_THROW(RequireIndexPairs(pairs.data(), 2, 2, 2, "matches"), std::invalid_argument);
  const std::vector<int32_t> negative = {-1, 0};
  EXPECT_THROW(RequireIndexPairs(negative.data(), 1, 3, 3, "matches"), std::invalid_argument);
}

// A degenerate input fails the call with a message; the next call on the same engine works.
TEST(TwoViewBinding, RefusesNaNKeypointsThenVerifiesTheNextPair) {
  std::vector<double> points;
  std::vector<int32_t> matches;
  for (int i = 0; i < 40; ++i) {
    points.insert(points.end(), {10.0 + 13 * (i % 7), 20.0 + 11 * (i / 7)});
    matches.insert(matches.end(), {i, i});
  }
  std::vector<double> broken = points;
  broken[5] = kNaN;
  TwoViewResult* refused =
      edgesfm_two_view_verify(broken.data(), 40, points.data(), 40, -1, nullptr, 0, 640, 480, -1,
                              nullptr, 0, 640, 480, matches.data(), 40, nullptr, 0);
  EXPECT_EQ(refused, nullptr);
  ASSERT_NE(edgesfm_last_error(), nullptr);
  EXPECT_NE(std::string(edgesfm_last_error()).find("image 1's keypoints"), std::string::npos);
  TwoViewResult* ok =
      edgesfm_two_view_verify(points.data(), 40, points.data(), 40, -1, nullptr, 0, 640, 480, -1,
                              nullptr, 0, 640, 480, matches.data(), 40, nullptr, 0);
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(edgesfm_last_error(), nullptr);
  edgesfm_two_view_result_free(ok);
}

}  // namespace
}  // namespace edgesfm::bindings
