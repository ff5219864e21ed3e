#include "image/projection.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "scene/camera_models.h"
#include "scene/cubemap.h"

namespace edgesfm {
namespace {

constexpr ProjectionSampling kAll[] = {ProjectionSampling::kNearest, ProjectionSampling::kLinear,
                                       ProjectionSampling::kCubic, ProjectionSampling::kLanczos};

uint32_t Rgba(int r, int g, int b, int a = 255) {
  return static_cast<uint32_t>(r) | (static_cast<uint32_t>(g) << 8) |
         (static_cast<uint32_t>(b) << 16) | (static_cast<uint32_t>(a) << 24);
}
int Red(uint32_t p) { return static_cast<int>(p & 0xff); }
int Green(uint32_t p) { return static_cast<int>((p >> 8) & 0xff); }
int Blue(uint32_t p) { return static_cast<int>((p >> 16) & 0xff); }

// A smooth panorama whose colour encodes the viewing direction: (1 + d) * 127.5 per axis.
std::vector<uint32_t> DirectionPanorama(int width, int height) {
  std::vector<uint32_t> pano(static_cast<size_t>(width) * height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      double u, v, w;
      SphericalCameraModel::CamFromImg(nullptr, x + 0.5, y + 0.5, width, height, &u, &v, &w);
      pano[y * width + x] = Rgba(static_cast<int>(std::lround((1 + u) * 127.5)),
                                 static_cast<int>(std::lround((1 + v) * 127.5)),
                                 static_cast<int>(std::lround((1 + w) * 127.5)));
    }
  }
  return pano;
}

TEST(Projection, CubemapFacesSeeTheirDirections) {
  const int width = 512, height = 256, size = 64;
  const std::vector<uint32_t> pano = DirectionPanorama(width, height);
  std::vector<uint32_t> face(size * size);
  const CubemapFaceIntrinsics k = CubemapIntrinsics(size);
  for (ProjectionSampling sampling : kAll) {
    for (int f = 0; f < kNumCubemapFaces; ++f) {
      RenderPerspectiveFromEquirectangular(pano.data(), width, height, CubemapFaceView(f, size),
                                           sampling, face.data());
      for (int y = 0; y < size; y += 9) {
        for (int x = 0; x < size; x += 7) {
          const Eigen::Vector3d d =
              (CubemapRigFromFace(f) * Eigen::Vector3d((x + 0.5 - k.principal) / k.focal,
                                                       (y + 0.5 - k.principal) / k.focal, 1))
                  .normalized();
          const uint32_t p = face[y * size + x];
          // Within what the panorama's pixel grid resolves (2 pi / 512 rad ~ 1.6 levels per pixel).
          EXPECT_NEAR(Red(p), (1 + d.x()) * 127.5, 3)
              << f << " " << x << " " << y << " " << static_cast<int>(sampling);
          EXPECT_NEAR(Green(p), (1 + d.y()) * 127.5, 3);
          EXPECT_NEAR(Blue(p), (1 + d.z()) * 127.5, 3);
        }
      }
    }
  }
}

TEST(Projection, ConstantImagesStayConstant) {
  // The interpolation weights sum to one (Lanczos normalised), so a flat panorama stays flat.
  const int width = 128, height = 64, size = 64;
  const std::vector<uint32_t> pano(width * height, Rgba(10, 200, 77, 255));
  std::vector<uint32_t> face(size * size);
  for (ProjectionSampling sampling : kAll) {
    RenderPerspectiveFromEquirectangular(pano.data(), width, height, CubemapFaceView(4, size),
                                         sampling, face.data());
    for (uint32_t p : face) ASSERT_EQ(p, Rgba(10, 200, 77, 255)) << static_cast<int>(sampling);
  }
}

TEST(Projection, CubemapRoundTripKeepsThePanorama) {
  const int width = 256, height = 128, size = 96;
  const std::vector<uint32_t> pano = DirectionPanorama(width, height);
  std::vector<uint32_t> faces(kNumCubemapFaces * size * size);
  std::vector<uint32_t> back(width * height);
  for (ProjectionSampling sampling : kAll) {
    for (int f = 0; f < kNumCubemapFaces; ++f) {
      RenderPerspectiveFromEquirectangular(pano.data(), width, height, CubemapFaceView(f, size),
                                           sampling, faces.data() + f * size * size);
    }
    RenderEquirectangularFromCubemap(faces.data(), size, width, height, sampling, back.data());
    double sum = 0;
    int worst = 0;
    for (size_t i = 0; i < pano.size(); ++i) {
      for (int shift : {0, 8, 16}) {
        const int d = std::abs(static_cast<int>((pano[i] >> shift) & 0xff) -
                               static_cast<int>((back[i] >> shift) & 0xff));
        sum += d;
        worst = std::max(worst, d);
      }
    }
    EXPECT_LT(sum / (3.0 * pano.size()), 1.0) << static_cast<int>(sampling);
    EXPECT_LE(worst, 6) << static_cast<int>(sampling);
  }
}

TEST(Projection, NearestCopiesSourcePixels) {
  // A 4 x 2 panorama of distinct colours: every face pixel is one of them, the front face's
  // centre is the pixel right of the centre column at the equator (longitude 0+, latitude 0+).
  std::vector<uint32_t> pano;
  for (int i = 0; i < 8; ++i) pano.push_back(Rgba(i * 30, 0, 0));
  std::vector<uint32_t> face(64 * 64);
  RenderPerspectiveFromEquirectangular(pano.data(), 4, 2, CubemapFaceView(0, 64),
                                       ProjectionSampling::kNearest, face.data());
  for (uint32_t p : face) EXPECT_EQ(Red(p) % 30, 0);
  EXPECT_EQ(face[32 * 64 + 32], pano[1 * 4 + 2]);
}

TEST(Projection, PerspectiveViewsFollowTheirRotation) {
  // A 90-degree view yawed to +x equals the right face.
  const int width = 256, height = 128, size = 64;
  const std::vector<uint32_t> pano = DirectionPanorama(width, height);
  PerspectiveView view = CubemapFaceView(1, size);
  std::vector<uint32_t> a(size * size), b(size * size);
  RenderPerspectiveFromEquirectangular(pano.data(), width, height, view, ProjectionSampling::kCubic,
                                       a.data());
  const float yaw[9] = {0, 0, 1, 0, 1, 0, -1, 0, 0};  // rig_from_face of the right face, row-major
  std::copy(yaw, yaw + 9, view.pano_from_cam);
  RenderPerspectiveFromEquirectangular(pano.data(), width, height, view, ProjectionSampling::kCubic,
                                       b.data());
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace edgesfm
