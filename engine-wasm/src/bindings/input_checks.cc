#include "bindings/input_checks.h"

#include <cmath>
#include <sstream>

#include "bindings/guard.h"
#include "scene/camera_models.h"

namespace edgesfm::bindings {
namespace {

template <typename T>
void RequireFiniteValues(const T* values, size_t count, const std::string& what) {
  Require(count == 0 || values != nullptr, what + ": missing");
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) {
      std::ostringstream message;
      message << what << ": value " << i << " is " << values[i]
              << " (coordinates and parameters must be finite)";
      throw std::invalid_argument(message.str());
    }
  }
}

}  // namespace

void RequireFinite(const double* values, size_t count, const std::string& what) {
  RequireFiniteValues(values, count, what);
}
void RequireFinite(const float* values, size_t count, const std::string& what) {
  RequireFiniteValues(values, count, what);
}

void RequireCamera(int model_id, const double* params, size_t num_params, double width,
                   double height, const std::string& what) {
  const auto model = static_cast<CameraModelId>(model_id);
  Require(ExistsCameraModelWithId(model),
          what + ": unknown camera model id " + std::to_string(model_id));
  const std::string name = CameraModelIdToName(model);
  Require(CameraModelVerifyParams(model, num_params),
          what + ": " + name + " takes " + std::to_string(CameraModelNumParams(model)) +
              " parameters, not " + std::to_string(num_params));
  RequireFinite(params, num_params, what + " parameters");
  for (int idx : CameraModelFocalLengthIdxs(model)) {
    Require(params[idx] > 0, what + ": focal length " + std::to_string(params[idx]) + " of " +
                                 name + " must be positive");
  }
  if (model != CameraModelId::kSpherical) {
    Require(std::isfinite(width) && std::isfinite(height) && width > 0 && height > 0,
            what + ": image size " + std::to_string(width) + " x " + std::to_string(height) +
                " must be positive");
  }
}

void RequireIndexPairs(const int32_t* pairs, size_t count, int size1, int size2,
                       const std::string& what) {
  Require(count == 0 || pairs != nullptr, what + ": missing");
  for (size_t i = 0; i < count; ++i) {
    const int32_t a = pairs[2 * i], b = pairs[2 * i + 1];
    if (a < 0 || b < 0 || a >= size1 || b >= size2) {
      std::ostringstream message;
      message << what << ": pair " << i << " (" << a << ", " << b << ") is outside " << size1
              << " x " << size2;
      throw std::invalid_argument(message.str());
    }
  }
}

}  // namespace edgesfm::bindings
