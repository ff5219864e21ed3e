// Input rules the bindings check before the engine runs, so a degenerate input (NaN
// coordinates, a zero focal length, an index past the end of its array) fails the call with a
// message naming what is wrong (bindings/guard.h) instead of computing garbage or reading
// outside its buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace edgesfm::bindings {

// Every value finite; `what` names the array in the message ("image 3's keypoints").
void RequireFinite(const double* values, size_t count, const std::string& what);
void RequireFinite(const float* values, size_t count, const std::string& what);

// A camera the engine can project with: a known model, its number of parameters, all finite,
// positive focal lengths and (except SPHERICAL) a positive image size.
void RequireCamera(int model_id, const double* params, size_t num_params, double width,
                   double height, const std::string& what);

// Every index pair (first, second) within [0, size1) x [0, size2).
void RequireIndexPairs(const int32_t* pairs, size_t count, int size1, int size2,
                       const std::string& what);

}  // namespace edgesfm::bindings
