#include "estimators/polynomial.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>

namespace edgesfm {
namespace {

// Real roots from the companion matrix's eigenvalues. CompanionMatrix is MatrixXd, or
// a dynamic-size matrix bounded at compile time (stack storage, the same arithmetic).
template <typename CompanionMatrix>
size_t CompanionRealRoots(const double* c, int degree, double* roots) {
  CompanionMatrix companion = CompanionMatrix::Zero(degree, degree);
  for (int i = 0; i < degree; ++i) companion(0, i) = -c[i + 1] / c[0];
  for (int i = 1; i < degree; ++i) companion(i, i - 1) = 1;
  Eigen::EigenSolver<CompanionMatrix> solver(companion, false);
  if (solver.info() != Eigen::Success) return 0;
  double derivative[kMaxStackPolynomialDegree + 1];
  std::vector<double> derivative_heap;
  double* d = derivative;
  if (degree > static_cast<int>(kMaxStackPolynomialDegree)) {
    derivative_heap.resize(degree);
    d = derivative_heap.data();
  }
  for (int i = 0; i < degree; ++i) d[i] = c[i] * (degree - i);
  size_t num_roots = 0;
  for (int i = 0; i < degree; ++i) {
    const std::complex<double> root = solver.eigenvalues()[i];
    // Accept roots whose imaginary part is small relative to their size.
    if (std::abs(root.imag()) > 1e-8 * std::max(1.0, std::abs(root.real()))) continue;
    double x = root.real();
    for (int iteration = 0; iteration < 3; ++iteration) {
      const double slope = EvaluatePolynomial(d, degree, x);
      if (slope == 0) break;
      x -= EvaluatePolynomial(c, degree + 1, x) / slope;
    }
    roots[num_roots++] = x;
  }
  return num_roots;
}

}  // namespace

double EvaluatePolynomial(const double* coeffs, size_t num_coeffs, double x) {
  double value = 0;
  for (size_t i = 0; i < num_coeffs; ++i) value = value * x + coeffs[i];  // Horner
  return value;
}

double EvaluatePolynomial(const std::vector<double>& coeffs, double x) {
  return EvaluatePolynomial(coeffs.data(), coeffs.size(), x);
}

size_t RealPolynomialRoots(const double* coeffs, size_t num_coeffs, double* roots) {
  double scale = 0;
  for (size_t i = 0; i < num_coeffs; ++i) scale = std::max(scale, std::abs(coeffs[i]));
  size_t first = 0;
  while (first < num_coeffs && std::abs(coeffs[first]) <= 1e-14 * scale) ++first;
  const double* c = coeffs + first;
  if (num_coeffs - first < 2) return 0;
  const int degree = static_cast<int>(num_coeffs - first) - 1;
  if (degree == 1) {
    roots[0] = -c[1] / c[0];
    return 1;
  }
  if (degree <= static_cast<int>(kMaxStackPolynomialDegree)) {
    using Bounded = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor,
                                  kMaxStackPolynomialDegree, kMaxStackPolynomialDegree>;
    return CompanionRealRoots<Bounded>(c, degree, roots);
  }
  return CompanionRealRoots<Eigen::MatrixXd>(c, degree, roots);
}

std::vector<double> RealPolynomialRoots(const std::vector<double>& coeffs) {
  std::vector<double> roots(coeffs.empty() ? 0 : coeffs.size() - 1);
  roots.resize(RealPolynomialRoots(coeffs.data(), coeffs.size(), roots.data()));
  return roots;
}

}  // namespace edgesfm
