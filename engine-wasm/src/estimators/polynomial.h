// Real roots of univariate polynomials, for the minimal solvers (7-point cubic, P3P
// cubic). Eigenvalues of the companion matrix (Edelman & Murakami, "Polynomial roots
// from companion matrix eigenvalues", Math. Comp. 1995), polished by Newton steps.
#pragma once

#include <cstddef>
#include <vector>

namespace edgesfm {

// Coefficients highest degree first: c[0] x^n + ... + c[n]. Leading (near-)zero
// coefficients are dropped, so a "cubic" with c[0] = 0 is solved as a quadratic.
std::vector<double> RealPolynomialRoots(const std::vector<double>& coeffs);

// The same without heap allocation for degree <= kMaxStackPolynomialDegree (RANSAC's
// inner loops): writes the real roots to `roots` (room for num_coeffs - 1) and returns
// how many there are. Identical results to the vector form.
constexpr size_t kMaxStackPolynomialDegree = 4;
size_t RealPolynomialRoots(const double* coeffs, size_t num_coeffs, double* roots);

double EvaluatePolynomial(const std::vector<double>& coeffs, double x);
double EvaluatePolynomial(const double* coeffs, size_t num_coeffs, double x);

}  // namespace edgesfm
