#include "image/projection.h"

#include <algorithm>
#include <cmath>

#include "scene/cubemap.h"

namespace edgesfm {
namespace {

constexpr float kPi = 3.14159265358979323846f;
constexpr float kInvTwoPi = 0.15915494309189535f;
constexpr float kInvPi = 0.3183098861837907f;

struct Rgba {
  float r = 0, g = 0, b = 0, a = 0;
};

Rgba Unpack(uint32_t p) {
  return {static_cast<float>(p & 0xffu), static_cast<float>((p >> 8) & 0xffu),
          static_cast<float>((p >> 16) & 0xffu), static_cast<float>(p >> 24)};
}

uint32_t Channel(float v) {
  return static_cast<uint32_t>(std::min(255.0f, std::max(0.0f, std::floor(v + 0.5f))));
}

uint32_t Pack(const Rgba& c) {
  return Channel(c.r) | (Channel(c.g) << 8) | (Channel(c.b) << 16) | (Channel(c.a) << 24);
}

// The pixel at integer coordinates: wrapped and continued over the poles in a panorama,
// clamped in a face.
struct PanoramaAddress {
  int width, height;
  int operator()(int x, int y) const {
    if (y < 0) {
      y = -1 - y;
      x += width / 2;
    } else if (y >= height) {
      y = 2 * height - 1 - y;
      x += width / 2;
    }
    y = std::min(std::max(y, 0), height - 1);
    x = ((x % width) + width) % width;
    return y * width + x;
  }
};

struct FaceAddress {
  int size, offset;
  int operator()(int x, int y) const {
    x = std::min(std::max(x, 0), size - 1);
    y = std::min(std::max(y, 0), size - 1);
    return offset + y * size + x;
  }
};

float Sinc(float x) {
  if (std::abs(x) < 1e-6f) return 1.0f;
  const float px = kPi * x;
  return std::sin(px) / px;
}

// Tap weights along one axis for the fractional position t in [0, 1): the taps sit at
// x0 + first .. x0 + first + count - 1.
int Weights(ProjectionSampling sampling, float t, float* w, int* first) {
  switch (sampling) {
    case ProjectionSampling::kLinear:
      *first = 0;
      w[0] = 1.0f - t;
      w[1] = t;
      return 2;
    case ProjectionSampling::kCubic: {
      const float t2 = t * t, t3 = t2 * t;
      *first = -1;
      w[0] = -0.5f * t3 + t2 - 0.5f * t;
      w[1] = 1.5f * t3 - 2.5f * t2 + 1.0f;
      w[2] = -1.5f * t3 + 2.0f * t2 + 0.5f * t;
      w[3] = 0.5f * t3 - 0.5f * t2;
      return 4;
    }
    case ProjectionSampling::kLanczos: {
      *first = -2;
      float sum = 0;
      for (int k = 0; k < 6; ++k) {
        const float d = t - static_cast<float>(k - 2);
        w[k] = Sinc(d) * Sinc(d / 3.0f);
        sum += w[k];
      }
      for (int k = 0; k < 6; ++k) w[k] /= sum;
      return 6;
    }
    case ProjectionSampling::kNearest:
      break;
  }
  *first = 0;
  w[0] = 1.0f;
  return 1;
}

// The image at continuous coordinates (sx, sy), pixel centres at +0.5.
template <typename Address>
uint32_t Sample(const uint32_t* image, const Address& address, float sx, float sy,
                ProjectionSampling sampling) {
  if (sampling == ProjectionSampling::kNearest) {
    return image[address(static_cast<int>(std::floor(sx)), static_cast<int>(std::floor(sy)))];
  }
  const float px = sx - 0.5f, py = sy - 0.5f;
  const float fx0 = std::floor(px), fy0 = std::floor(py);
  const int x0 = static_cast<int>(fx0), y0 = static_cast<int>(fy0);
  float wx[6], wy[6];
  int first_x = 0, first_y = 0;
  const int nx = Weights(sampling, px - fx0, wx, &first_x);
  const int ny = Weights(sampling, py - fy0, wy, &first_y);
  Rgba sum;
  for (int j = 0; j < ny; ++j) {
    Rgba row;
    for (int i = 0; i < nx; ++i) {
      const Rgba p = Unpack(image[address(x0 + first_x + i, y0 + first_y + j)]);
      row.r += wx[i] * p.r;
      row.g += wx[i] * p.g;
      row.b += wx[i] * p.b;
      row.a += wx[i] * p.a;
    }
    sum.r += wy[j] * row.r;
    sum.g += wy[j] * row.g;
    sum.b += wy[j] * row.b;
    sum.a += wy[j] * row.a;
  }
  return Pack(sum);
}

}  // namespace

PerspectiveView CubemapFaceView(int face, int face_size) {
  PerspectiveView view;
  view.width = view.height = face_size;
  const CubemapFaceIntrinsics k = CubemapIntrinsics(face_size);
  view.fx = view.fy = static_cast<float>(k.focal);
  view.cx = view.cy = static_cast<float>(k.principal);
  const Eigen::Matrix3d& r = CubemapRigFromFace(face);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) view.pano_from_cam[3 * i + j] = static_cast<float>(r(i, j));
  }
  return view;
}

void RenderPerspectiveFromEquirectangular(const uint32_t* pano, int pano_width, int pano_height,
                                          const PerspectiveView& view, ProjectionSampling sampling,
                                          uint32_t* out) {
  const PanoramaAddress address{pano_width, pano_height};
  const float* r = view.pano_from_cam;
  const float width = static_cast<float>(pano_width), height = static_cast<float>(pano_height);
  for (int j = 0; j < view.height; ++j) {
    const float v = (static_cast<float>(j) + 0.5f - view.cy) / view.fy;
    for (int i = 0; i < view.width; ++i) {
      const float u = (static_cast<float>(i) + 0.5f - view.cx) / view.fx;
      const float x = r[0] * u + r[1] * v + r[2];
      const float y = r[3] * u + r[4] * v + r[5];
      const float z = r[6] * u + r[7] * v + r[8];
      const float longitude = std::atan2(x, z);
      const float latitude = std::atan2(y, std::sqrt(x * x + z * z));
      const float sx = (longitude * kInvTwoPi + 0.5f) * width;
      const float sy = (latitude * kInvPi + 0.5f) * height;
      out[j * view.width + i] = Sample(pano, address, sx, sy, sampling);
    }
  }
}

void RenderEquirectangularFromCubemap(const uint32_t* faces, int face_size, int width, int height,
                                      ProjectionSampling sampling, uint32_t* out) {
  const float half = static_cast<float>(face_size) * 0.5f;
  for (int j = 0; j < height; ++j) {
    const float latitude =
        ((static_cast<float>(j) + 0.5f) / static_cast<float>(height) - 0.5f) * kPi;
    for (int i = 0; i < width; ++i) {
      const float longitude =
          ((static_cast<float>(i) + 0.5f) / static_cast<float>(width) - 0.5f) * 2.0f * kPi;
      const float x = std::cos(latitude) * std::sin(longitude);
      const float y = std::sin(latitude);
      const float z = std::cos(latitude) * std::cos(longitude);
      const int face = CubemapFaceOfRay(Eigen::Vector3d(x, y, z));
      // face_from_rig = rig_from_face^T: the face axes dotted with the ray.
      const Eigen::Matrix3d& r = CubemapRigFromFace(face);
      const float fx = static_cast<float>(r(0, 0)) * x + static_cast<float>(r(1, 0)) * y +
                       static_cast<float>(r(2, 0)) * z;
      const float fy = static_cast<float>(r(0, 1)) * x + static_cast<float>(r(1, 1)) * y +
                       static_cast<float>(r(2, 1)) * z;
      const float fz = static_cast<float>(r(0, 2)) * x + static_cast<float>(r(1, 2)) * y +
                       static_cast<float>(r(2, 2)) * z;
      const FaceAddress address{face_size, face * face_size * face_size};
      out[j * width + i] =
          Sample(faces, address, fx / fz * half + half, fy / fz * half + half, sampling);
    }
  }
}

}  // namespace edgesfm
