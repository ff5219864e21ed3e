// Engine-wide bindings: version and camera model registry, so TypeScript can check
// that the loaded module matches and validate camera parameters before calling.
#include <cstring>
#include <string>

#include "bindings/export.h"
#include "bindings/guard.h"
#include "scene/camera_models.h"
#include "util/parallel_for.h"

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

// Threads the engine's parallel loops use (util/parallel_for.h): 1 in the plain module, the
// device's hardware threads (at most 8) in the threaded one.
EDGESFM_EXPORT int edgesfm_parallel_threads() { return edgesfm::ParallelThreads(); }

// Caps the threads of later calls (0: none), so that a runner's other engines keep their cores.
EDGESFM_EXPORT void edgesfm_set_parallel_threads(int threads) {
  edgesfm::SetParallelThreadLimit(threads);
}

// Model id for a NUL-terminated COLMAP model name, or -1.
EDGESFM_EXPORT int edgesfm_camera_model_id(const char* name) {
  return static_cast<int>(edgesfm::CameraModelNameToId(name));
}

// Number of parameters of a model id, or -1 if unknown.
EDGESFM_EXPORT int edgesfm_camera_model_num_params(int model_id) {
  return edgesfm::CameraModelNumParams(static_cast<edgesfm::CameraModelId>(model_id));
}
