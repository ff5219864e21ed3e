#include "estimators/polynomial.h"

#include <Eigen/Eigenvalues>
#include <cmath>

namespace edgesfm {

double EvaluatePolynomial(const std::vector<double>& coeffs, double x) {
  double value = 0;
  for (const double c : coeffs) value = value * x + c;  // Horner
  return value;
}

std::vector<double> RealPolynomialRoots(const std::vector<double>& coeffs) {
  double scale = 0;
  for (const double c : coeffs) scale = std::max(scale, std::abs(c));
  size_t first = 0;
  while (first < coeffs.size() && std::abs(coeffs[first]) <= 1e-14 * scale) ++first;
  std::vector<double> c(coeffs.begin() + first, coeffs.end());
  std::vector<double> roots;
  if (c.size() < 2) return roots;
  const int degree = static_cast<int>(c.size()) - 1;
  if (degree == 1) {
    roots.push_back(-c[1] / c[0]);
    return roots;
  }
  Eigen::MatrixXd companion = Eigen::MatrixXd::Zero(degree, degree);
  for (int i = 0; i < degree; ++i) companion(0, i) = -c[i + 1] / c[0];
  for (int i = 1; i < degree; ++i) companion(i, i - 1) = 1;
  Eigen::EigenSolver<Eigen::MatrixXd> solver(companion, false);
  if (solver.info() != Eigen::Success) return roots;
  std::vector<double> derivative(degree);
  for (int i = 0; i < degree; ++i) derivative[i] = c[i] * (degree - i);
  for (int i = 0; i < degree; ++i) {
    const std::complex<double> root = solver.eigenvalues()[i];
    // Accept roots whose imaginary part is small relative to their size.
    if (std::abs(root.imag()) > 1e-8 * std::max(1.0, std::abs(root.real()))) continue;
    double x = root.real();
    for (int iteration = 0; iteration < 3; ++iteration) {
      const double d = EvaluatePolynomial(derivative, x);
      if (d == 0) break;
      x -= EvaluatePolynomial(c, x) / d;
    }
    roots.push_back(x);
  }
  return roots;
}

}  // namespace edgesfm
