// Engine-wide bindings: version and camera model registry, so TypeScript can check
// that the loaded module matches and validate camera parameters before calling.
#include <cstring>
#include <string>

#include "bindings/export.h"
#include "scene/camera_models.h"

// Bumped when a binding changes incompatibly; ts/engine.ts checks it at load.
EDGESFM_EXPORT int edgesfm_abi_version() { return 1; }

// Model id for a NUL-terminated COLMAP model name, or -1.
EDGESFM_EXPORT int edgesfm_camera_model_id(const char* name) {
  return static_cast<int>(edgesfm::CameraModelNameToId(name));
}

// Number of parameters of a model id, or -1 if unknown.
EDGESFM_EXPORT int edgesfm_camera_model_num_params(int model_id) {
  return edgesfm::CameraModelNumParams(static_cast<edgesfm::CameraModelId>(model_id));
}
