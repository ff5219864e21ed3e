// A mapping checkpoint: the serialisable state of an IncrementalPipeline (its models,
// the model being built and the mapper's bookkeeping), so a mapping task interrupted
// between two steps can resume on another runner. The immutable input (cameras,
// keypoints, matches) is not stored: the resuming side supplies it again.
//
// Format (little-endian): "EDGESFM-MAPCKPT" magic + version, then the pipeline
// counters, the bookkeeping maps and pair sets, and each reconstruction as camera parameters,
// registered images in registration order with their poses, and points (id, xyz, track)
// with the largest id ever used, so a restored model keeps its point ids and numbers new
// points as the uninterrupted run would.
#pragma once

#include <cstdint>
#include <vector>

#include "sfm/incremental_pipeline.h"

namespace edgesfm {

std::vector<uint8_t> SerializeMappingCheckpoint(const IncrementalPipeline::State& state);

// `input` is the pipeline's input (cameras and images with keypoints). False if the
// bytes are not a checkpoint of this version or do not fit the input.
bool DeserializeMappingCheckpoint(const std::vector<uint8_t>& bytes, const Reconstruction& input,
                                  IncrementalPipeline::State* state);

}  // namespace edgesfm
