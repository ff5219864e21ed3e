// Engine-wide bindings: version and camera model registry, so TypeScript can check
// that the loaded module matches and validate camera parameters before calling.
#include <cstring>
#include <string>

#include "bindings/export.h"
#include "bindings/guard.h"
#include "scene/camera_models.h"

namespace edgesfm::bindings {
std::string& LastError() {
  static std::string message;
  return message;
}
}  // namespace edgesfm::bindings

// Bumped when a binding changes incompatibly; ts/engine.ts checks it at load.
// 2: bindings catch what the engine throws and report it through edgesfm_last_error.
EDGESFM_EXPORT int edgesfm_abi_version() { return 2; }

// Why the last guarded binding call failed (NUL-terminated), or null when it succeeded.
EDGESFM_EXPORT const char* edgesfm_last_error() {
  const std::string& message = edgesfm::bindings::LastError();
  return message.empty() ? nullptr : message.c_str();
}

// Forgets the last error once the caller has read it.
EDGESFM_EXPORT void edgesfm_clear_error() { edgesfm::bindings::LastError().clear(); }

// Model id for a NUL-terminated COLMAP model name, or -1.
EDGESFM_EXPORT int edgesfm_camera_model_id(const char* name) {
  return static_cast<int>(edgesfm::CameraModelNameToId(name));
}

// Number of parameters of a model id, or -1 if unknown.
EDGESFM_EXPORT int edgesfm_camera_model_num_params(int model_id) {
  return edgesfm::CameraModelNumParams(static_cast<edgesfm::CameraModelId>(model_id));
}
