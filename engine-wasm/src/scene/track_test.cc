#include "scene/track.h"

#include <gtest/gtest.h>

namespace edgesfm {
namespace {

TEST(Track, AddAndDeleteElements) {
  Track track;
  track.AddElement(1, 2);
  track.AddElement(TrackElement(3, 4));
  track.AddElements({TrackElement(1, 2), TrackElement(5, 6)});
  EXPECT_EQ(track.Length(), 4u);
  track.DeleteElement(1, 2);
  EXPECT_EQ(track.Length(), 2u);
  track.DeleteElement(0);
  EXPECT_EQ(track.Element(0), TrackElement(5, 6));
}

}  // namespace
}  // namespace edgesfm
