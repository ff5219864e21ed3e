// A triangulated 3D point with its colour, mean reprojection error and track.
#pragma once

#include <Eigen/Core>
#include <cstdint>

#include "scene/track.h"

namespace edgesfm {

struct Point3D {
  Eigen::Vector3d xyz = Eigen::Vector3d::Zero();
  Eigen::Matrix<uint8_t, 3, 1> color = Eigen::Matrix<uint8_t, 3, 1>::Zero();
  // Mean reprojection error in pixels; -1 until computed.
  double error = -1;
  Track track;

  bool HasError() const { return error >= 0; }
};

}  // namespace edgesfm
