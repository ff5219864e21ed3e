#include "sfm/synthetic_dataset.h"

#include <gtest/gtest.h>

namespace edgesfm {
namespace {

TEST(SyntheticDataset, TruthTracksAgreeWithCorrespondences) {
  SyntheticDatasetOptions options;
  options.point2D_noise_px = 0;
  SyntheticDataset data = SynthesizeDataset(options);
  EXPECT_EQ(data.truth.NumRegImages(), 8u);
  EXPECT_EQ(data.input.NumRegImages(), 0u);
  EXPECT_GT(data.truth.NumPoints3D(), 250u);
  data.truth.UpdatePoint3DErrors();
  for (const auto& [id, point] : data.truth.Points3D()) {
    const auto& elements = point.track.Elements();
    // Noise-free: every observation reprojects exactly; consecutive track elements match.
    EXPECT_LT(data.truth.ReprojectionError(id, elements[0]), 1e-6);
    const auto& corrs = data.correspondence_graph.FindCorrespondences(elements[0].image_id,
                                                                      elements[0].point2D_idx);
    EXPECT_EQ(corrs.size(), elements.size() - 1);
  }
}

}  // namespace
}  // namespace edgesfm
