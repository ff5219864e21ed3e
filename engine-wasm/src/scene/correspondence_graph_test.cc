#include "scene/correspondence_graph.h"

#include <gtest/gtest.h>

namespace edgesfm {
namespace {

using Correspondence = CorrespondenceGraph::Correspondence;

// Three images; keypoint 0 of image 1 is matched to image 2 (kp 0), which is matched to
// image 3 (kp 5): a three-view track reachable transitively.
CorrespondenceGraph ThreeImageGraph() {
  CorrespondenceGraph graph;
  graph.AddImage(1, 10);
  graph.AddImage(2, 10);
  graph.AddImage(3, 10);
  graph.AddImage(4, 10);  // no matches: dropped by Finalize
  graph.AddCorrespondences(1, 2, {{0, 0}, {1, 1}, {2, 2}});
  graph.AddCorrespondences(2, 3, {{0, 5}, {3, 3}});
  graph.Finalize();
  return graph;
}

TEST(CorrespondenceGraph, CountsPerImageAndPair) {
  const CorrespondenceGraph graph = ThreeImageGraph();
  EXPECT_EQ(graph.NumImages(), 3u);
  EXPECT_FALSE(graph.ExistsImage(4));
  EXPECT_EQ(graph.NumImagePairs(), 2u);
  EXPECT_EQ(graph.NumCorrespondencesBetweenImages(1, 2), 3u);
  EXPECT_EQ(graph.NumCorrespondencesBetweenImages(2, 1), 3u);
  EXPECT_EQ(graph.NumCorrespondencesBetweenImages(1, 3), 0u);
  EXPECT_EQ(graph.NumObservationsForImage(2), 4u);     // keypoints 0..3
  EXPECT_EQ(graph.NumCorrespondencesForImage(2), 5u);  // kp 0 has two
  EXPECT_EQ(graph.NumCorrespondencesBetweenAllImages().at(ImagePairToPairId(2, 3)), 2u);
}

TEST(CorrespondenceGraph, DuplicateAndOutOfRangeMatchesAreSkipped) {
  CorrespondenceGraph graph;
  graph.AddImage(1, 3);
  graph.AddImage(2, 3);
  graph.AddCorrespondences(1, 2, {{0, 0}, {0, 0}, {7, 1}, {1, 9}});
  graph.AddCorrespondences(2, 1, {{0, 0}});
  graph.Finalize();
  EXPECT_EQ(graph.NumCorrespondencesBetweenImages(1, 2), 1u);
}

TEST(CorrespondenceGraph, FindsDirectAndTransitiveCorrespondences) {
  const CorrespondenceGraph graph = ThreeImageGraph();
  EXPECT_EQ(graph.FindCorrespondences(1, 0), (std::vector<Correspondence>{{2, 0}}));
  EXPECT_TRUE(graph.HasCorrespondences(3, 5));
  EXPECT_FALSE(graph.HasCorrespondences(3, 4));
  std::vector<Correspondence> found;
  graph.FindTransitiveCorrespondences(1, 0, 1, &found);
  EXPECT_EQ(found, (std::vector<Correspondence>{{2, 0}}));
  graph.FindTransitiveCorrespondences(1, 0, 2, &found);
  EXPECT_EQ(found, (std::vector<Correspondence>{{2, 0}, {3, 5}}));
}

TEST(CorrespondenceGraph, MatchesBetweenImagesInTheAskedOrder) {
  const CorrespondenceGraph graph = ThreeImageGraph();
  EXPECT_EQ(graph.FindCorrespondencesBetweenImages(3, 2),
            (CorrespondenceGraph::Matches{{3, 3}, {5, 0}}));
  EXPECT_TRUE(graph.IsTwoViewObservation(1, 1));
  EXPECT_FALSE(graph.IsTwoViewObservation(1, 0));  // its partner also sees image 3
}

TEST(ImagePairId, IsSymmetricAndInvertible) {
  EXPECT_EQ(ImagePairToPairId(3, 9), ImagePairToPairId(9, 3));
  EXPECT_EQ(PairIdToImagePair(ImagePairToPairId(9, 3)), (std::pair<image_t, image_t>(3, 9)));
  EXPECT_TRUE(SwapImagePair(9, 3));
}

}  // namespace
}  // namespace edgesfm
