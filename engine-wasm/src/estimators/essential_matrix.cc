#include "estimators/essential_matrix.h"

#include <Eigen/Dense>
#include <array>
#include <cmath>
#include <complex>

namespace edgesfm {
namespace {

// Polynomials in (x, y, z) of total degree <= 3, 20 coefficients. The order puts the
// ten cubic monomials first, then the ten that form the quotient-ring basis:
//   x^3 x^2y xy^2 y^3 x^2z xyz y^2z xz^2 yz^2 z^3 | x^2 xy y^2 xz yz z^2 x y z 1
constexpr int kNumMonomials = 20;
constexpr std::array<std::array<int, 3>, kNumMonomials> kExponents = {{
    {3, 0, 0}, {2, 1, 0}, {1, 2, 0}, {0, 3, 0}, {2, 0, 1}, {1, 1, 1}, {0, 2, 1},
    {1, 0, 2}, {0, 1, 2}, {0, 0, 3}, {2, 0, 0}, {1, 1, 0}, {0, 2, 0}, {1, 0, 1},
    {0, 1, 1}, {0, 0, 2}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 0, 0},
}};

constexpr int MonomialIndex(int i, int j, int k) {
  for (int m = 0; m < kNumMonomials; ++m) {
    if (kExponents[m][0] == i && kExponents[m][1] == j && kExponents[m][2] == k) return m;
  }
  return -1;
}

// kProduct[a][b]: the monomial of kExponents[a] * kExponents[b], or -1 above degree 3
// (looked up once: products are the inner loop of every minimal solve).
struct ProductTable {
  std::array<std::array<int, kNumMonomials>, kNumMonomials> index;
  ProductTable() {
    for (int a = 0; a < kNumMonomials; ++a) {
      for (int b = 0; b < kNumMonomials; ++b) {
        index[a][b] =
            MonomialIndex(kExponents[a][0] + kExponents[b][0], kExponents[a][1] + kExponents[b][1],
                          kExponents[a][2] + kExponents[b][2]);
      }
    }
  }
};
const ProductTable kProduct;

struct Poly {
  std::array<double, kNumMonomials> c{};

  Poly operator+(const Poly& o) const {
    Poly r;
    for (int m = 0; m < kNumMonomials; ++m) r.c[m] = c[m] + o.c[m];
    return r;
  }
  Poly operator-(const Poly& o) const {
    Poly r;
    for (int m = 0; m < kNumMonomials; ++m) r.c[m] = c[m] - o.c[m];
    return r;
  }
  Poly operator*(double s) const {
    Poly r;
    for (int m = 0; m < kNumMonomials; ++m) r.c[m] = c[m] * s;
    return r;
  }
  // Products here never exceed degree 3 (linear entries of E, at most three factors).
  // Operands are sparse (a linear entry has 4 terms): multiply their nonzero terms only.
  Poly operator*(const Poly& o) const {
    std::array<int, kNumMonomials> nonzero;
    int n = 0;
    for (int b = 0; b < kNumMonomials; ++b) {
      if (o.c[b] != 0) nonzero[n++] = b;
    }
    Poly r;
    for (int a = 0; a < kNumMonomials; ++a) {
      if (c[a] == 0) continue;
      for (int k = 0; k < n; ++k) r.c[kProduct.index[a][nonzero[k]]] += c[a] * o.c[nonzero[k]];
    }
    return r;
  }
};

using PolyMatrix = std::array<std::array<Poly, 3>, 3>;

PolyMatrix Multiply(const PolyMatrix& A, const PolyMatrix& B) {
  PolyMatrix C;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      C[i][j] = A[i][0] * B[0][j] + A[i][1] * B[1][j] + A[i][2] * B[2][j];
    }
  }
  return C;
}

PolyMatrix Transpose(const PolyMatrix& A) {
  PolyMatrix T;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) T[i][j] = A[j][i];
  }
  return T;
}

// Row of the constraint x2^T E x1 = 0 for E stored row-major.
Eigen::Matrix<double, 1, 9> EpipolarRow(const Eigen::Vector3d& x1, const Eigen::Vector3d& x2) {
  Eigen::Matrix<double, 1, 9> row;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) row(3 * i + j) = x2(i) * x1(j);
  }
  return row;
}

// Solves for E given the null-space basis (columns of `basis`, E = x X + y Y + z Z + W).
void SolveFromNullSpace(const Eigen::Matrix<double, 9, 4>& basis,
                        std::vector<Eigen::Matrix3d>* models) {
  static const int kX = MonomialIndex(1, 0, 0), kY = MonomialIndex(0, 1, 0),
                   kZ = MonomialIndex(0, 0, 1), kOne = MonomialIndex(0, 0, 0);
  PolyMatrix E;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      Poly& p = E[i][j];
      p.c[kX] = basis(3 * i + j, 0);
      p.c[kY] = basis(3 * i + j, 1);
      p.c[kZ] = basis(3 * i + j, 2);
      p.c[kOne] = basis(3 * i + j, 3);
    }
  }
  // The ten cubic constraints.
  Eigen::Matrix<double, 10, kNumMonomials> constraints;
  const Poly det = E[0][0] * (E[1][1] * E[2][2] - E[1][2] * E[2][1]) -
                   E[0][1] * (E[1][0] * E[2][2] - E[1][2] * E[2][0]) +
                   E[0][2] * (E[1][0] * E[2][1] - E[1][1] * E[2][0]);
  const PolyMatrix EEt = Multiply(E, Transpose(E));
  const Poly trace = EEt[0][0] + EEt[1][1] + EEt[2][2];
  const PolyMatrix EEtE = Multiply(EEt, E);
  for (int m = 0; m < kNumMonomials; ++m) constraints(0, m) = det.c[m];
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const Poly p = EEtE[i][j] * 2.0 - trace * E[i][j];
      for (int m = 0; m < kNumMonomials; ++m) constraints(1 + 3 * i + j, m) = p.c[m];
    }
  }
  // Eliminate the cubic monomials: [C3 | C2] -> cubic = -B * basis.
  const Eigen::Matrix<double, 10, 10> C3 = constraints.leftCols<10>();
  const Eigen::Matrix<double, 10, 10> C2 = constraints.rightCols<10>();
  Eigen::FullPivLU<Eigen::Matrix<double, 10, 10>> lu(C3);
  if (!lu.isInvertible()) return;
  const Eigen::Matrix<double, 10, 10> B = lu.solve(C2);
  // Action matrix of multiplication by x on the basis (x^2 xy y^2 xz yz z^2 x y z 1):
  // row r holds x * basis[r] expressed in the basis.
  Eigen::Matrix<double, 10, 10> action = Eigen::Matrix<double, 10, 10>::Zero();
  const int basis_offset = 10;
  for (int r = 0; r < 10; ++r) {
    const auto& e = kExponents[basis_offset + r];
    const int product = MonomialIndex(e[0] + 1, e[1], e[2]);
    if (product < 10) {
      action.row(r) = -B.row(product);
    } else {
      action(r, product - basis_offset) = 1;
    }
  }
  Eigen::EigenSolver<Eigen::Matrix<double, 10, 10>> eigen(action);
  if (eigen.info() != Eigen::Success) return;
  for (int s = 0; s < 10; ++s) {
    const std::complex<double> value = eigen.eigenvalues()(s);
    if (std::abs(value.imag()) > 1e-8 * std::max(1.0, std::abs(value.real()))) continue;
    const Eigen::Matrix<double, 10, 1> v = eigen.eigenvectors().col(s).real();
    const double w = v(9);  // the monomial 1
    if (std::abs(w) < 1e-14 * v.norm()) continue;
    const double x = v(6) / w, y = v(7) / w, z = v(8) / w;
    const Eigen::Matrix<double, 9, 1> e =
        x * basis.col(0) + y * basis.col(1) + z * basis.col(2) + basis.col(3);
    const Eigen::Matrix3d E_solution =
        Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(e.data());
    models->push_back(E_solution / E_solution.norm());
  }
}

}  // namespace

void EssentialMatrixFivePointEstimator::Estimate(const std::vector<X_t>& rays1,
                                                 const std::vector<Y_t>& rays2,
                                                 std::vector<M_t>* models) {
  models->clear();
  if (rays1.size() < 5 || rays1.size() != rays2.size()) return;
  // Unit rays keep the rows equally weighted whatever the camera model.
  Eigen::Matrix<double, 9, 4> basis;
  if (rays1.size() == 5) {
    // The minimal system's null space exactly: the last four columns of Q in A^T = QR.
    Eigen::Matrix<double, 9, 5> At;
    for (int i = 0; i < 5; ++i)
      At.col(i) = EpipolarRow(rays1[i].normalized(), rays2[i].normalized()).transpose();
    const Eigen::HouseholderQR<Eigen::Matrix<double, 9, 5>> qr(At);
    const Eigen::Matrix<double, 9, 9> Q = qr.householderQ();
    basis = Q.rightCols<4>();
  } else {
    // Least squares over all rays: the four smallest eigenvectors of A^T A.
    Eigen::Matrix<double, 9, 9> AtA = Eigen::Matrix<double, 9, 9>::Zero();
    for (size_t i = 0; i < rays1.size(); ++i) {
      const Eigen::Matrix<double, 1, 9> row =
          EpipolarRow(rays1[i].normalized(), rays2[i].normalized());
      AtA.noalias() += row.transpose() * row;
    }
    Eigen::SelfAdjointEigenSolver<Eigen::Matrix<double, 9, 9>> eigen(AtA);
    basis = eigen.eigenvectors().leftCols<4>();
  }
  SolveFromNullSpace(basis, models);
}

double SphericalSampsonError(const Eigen::Vector3d& ray1, const Eigen::Vector3d& ray2,
                             const Eigen::Matrix3d& E) {
  const Eigen::Vector3d x1 = ray1.normalized();
  const Eigen::Vector3d x2 = ray2.normalized();
  const Eigen::Vector3d Ex1 = E * x1;
  const Eigen::Vector3d Etx2 = E.transpose() * x2;
  const double algebraic = x2.dot(Ex1);
  // Gradients of the constraint restricted to the tangent planes of the unit sphere.
  const Eigen::Vector3d g1 = Etx2 - Etx2.dot(x1) * x1;
  const Eigen::Vector3d g2 = Ex1 - Ex1.dot(x2) * x2;
  const double denominator = g1.squaredNorm() + g2.squaredNorm();
  return denominator > 0 ? algebraic * algebraic / denominator : std::numeric_limits<double>::max();
}

void EssentialMatrixFivePointEstimator::Residuals(const std::vector<X_t>& rays1,
                                                  const std::vector<Y_t>& rays2, const M_t& E,
                                                  std::vector<double>* residuals) {
  residuals->resize(rays1.size());
  for (size_t i = 0; i < rays1.size(); ++i) {
    const Eigen::Vector3d& x1 = rays1[i];
    const Eigen::Vector3d& x2 = rays2[i];
    if (x1.z() != 1 || x2.z() != 1) {
      (*residuals)[i] = SphericalSampsonError(x1, x2, E);
      continue;
    }
    // Pinhole rays on the z = 1 plane: COLMAP's Sampson error in normalized image coordinates.
    const double Ex1_0 = E(0, 0) * x1.x() + E(0, 1) * x1.y() + E(0, 2);
    const double Ex1_1 = E(1, 0) * x1.x() + E(1, 1) * x1.y() + E(1, 2);
    const double Ex1_2 = E(2, 0) * x1.x() + E(2, 1) * x1.y() + E(2, 2);
    const double Etx2_0 = E(0, 0) * x2.x() + E(1, 0) * x2.y() + E(2, 0);
    const double Etx2_1 = E(0, 1) * x2.x() + E(1, 1) * x2.y() + E(2, 1);
    const double algebraic = x2.x() * Ex1_0 + x2.y() * Ex1_1 + Ex1_2;
    const double denominator = Ex1_0 * Ex1_0 + Ex1_1 * Ex1_1 + Etx2_0 * Etx2_0 + Etx2_1 * Etx2_1;
    (*residuals)[i] =
        denominator > 0 ? algebraic * algebraic / denominator : std::numeric_limits<double>::max();
  }
}

}  // namespace edgesfm
