#include "scene/camera_models.h"

#include <vector>

namespace edgesfm {
namespace {

template <size_t N>
std::vector<int> ToVector(const std::array<int, N>& a) {
  return std::vector<int>(a.begin(), a.end());
}

}  // namespace

bool ExistsCameraModelWithId(CameraModelId model_id) {
  return VisitCameraModel(model_id, [](auto) {});
}

bool ExistsCameraModelWithName(const std::string& model_name) {
  return CameraModelNameToId(model_name) != CameraModelId::kInvalid;
}

CameraModelId CameraModelNameToId(const std::string& model_name) {
#define EDGESFM_NAME_CASE(Model) \
  if (model_name == Model::kModelName) return Model::kModelId;
  EDGESFM_CAMERA_MODELS(EDGESFM_NAME_CASE)
#undef EDGESFM_NAME_CASE
  return CameraModelId::kInvalid;
}

std::string CameraModelIdToName(CameraModelId model_id) {
  std::string name;
  VisitCameraModel(model_id, [&](auto model) { name = decltype(model)::kModelName; });
  return name;
}

int CameraModelNumParams(CameraModelId model_id) {
  int num_params = -1;
  VisitCameraModel(model_id, [&](auto model) { num_params = decltype(model)::kNumParams; });
  return num_params;
}

std::string CameraModelParamsInfo(CameraModelId model_id) {
  std::string info;
  VisitCameraModel(model_id, [&](auto model) { info = decltype(model)::kParamsInfo; });
  return info;
}

std::vector<int> CameraModelFocalLengthIdxs(CameraModelId model_id) {
  std::vector<int> idxs;
  VisitCameraModel(model_id,
                   [&](auto model) { idxs = ToVector(decltype(model)::kFocalLengthIdxs); });
  return idxs;
}

std::vector<int> CameraModelPrincipalPointIdxs(CameraModelId model_id) {
  std::vector<int> idxs;
  VisitCameraModel(model_id,
                   [&](auto model) { idxs = ToVector(decltype(model)::kPrincipalPointIdxs); });
  return idxs;
}

std::vector<int> CameraModelExtraParamsIdxs(CameraModelId model_id) {
  std::vector<int> idxs;
  VisitCameraModel(model_id,
                   [&](auto model) { idxs = ToVector(decltype(model)::kExtraParamsIdxs); });
  return idxs;
}

bool CameraModelVerifyParams(CameraModelId model_id, size_t num_params) {
  const int expected = CameraModelNumParams(model_id);
  return expected >= 0 && static_cast<size_t>(expected) == num_params;
}

std::vector<double> CameraModelInitializeParams(CameraModelId model_id, double focal_length,
                                                int width, int height) {
  std::vector<double> params;
  VisitCameraModel(model_id, [&](auto model) {
    using Model = decltype(model);
    params.assign(Model::kNumParams, 0.0);
    for (const int idx : Model::kFocalLengthIdxs) params[idx] = focal_length;
    if (Model::kPrincipalPointIdxs.size() == 2) {
      params[Model::kPrincipalPointIdxs[0]] = width / 2.0;
      params[Model::kPrincipalPointIdxs[1]] = height / 2.0;
    }
  });
  return params;
}

bool CameraModelImgFromCam(CameraModelId model_id, const double* params, double u, double v,
                           double w, double width, double height, double* x, double* y) {
  bool ok = false;
  VisitCameraModel(model_id, [&](auto model) {
    ok = decltype(model)::ImgFromCam(params, u, v, w, width, height, x, y);
  });
  return ok;
}

void CameraModelCamFromImg(CameraModelId model_id, const double* params, double x, double y,
                           double width, double height, double* u, double* v, double* w) {
  VisitCameraModel(model_id, [&](auto model) {
    decltype(model)::CamFromImg(params, x, y, width, height, u, v, w);
  });
}

double CameraModelCamFromImgThreshold(CameraModelId model_id, const double* params, double width,
                                      double height, double threshold) {
  if (model_id == CameraModelId::kSpherical) {
    // One pixel spans 2 pi / width radians of longitude (and pi / height of latitude,
    // the same for the usual 2:1 panorama).
    return threshold * 2 * camera_model_internal::kPi / width;
  }
  (void)height;
  double mean_focal = 0;
  const std::vector<int> idxs = CameraModelFocalLengthIdxs(model_id);
  for (const int idx : idxs) mean_focal += params[idx];
  if (idxs.empty() || mean_focal <= 0) return threshold;
  return threshold / (mean_focal / idxs.size());
}

}  // namespace edgesfm
