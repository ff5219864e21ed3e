#include "optim/reduced_camera_system.h"

#include <Eigen/Cholesky>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>
#include <algorithm>
#include <stdexcept>

namespace edgesfm {

ReducedCameraSystem::ReducedCameraSystem(const std::vector<int>& block_dims,
                                         ReducedCameraSolverOptions options)
    : dims_(block_dims), options_(options) {
  offsets_.resize(dims_.size());
  for (size_t i = 0; i < dims_.size(); ++i) {
    offsets_[i] = dim_;
    dim_ += dims_[i];
  }
  for (int i = 0; i < num_blocks(); ++i) AddCoupling(i, i);
}

void ReducedCameraSystem::AddCoupling(int a, int b) {
  if (finalized_) throw std::logic_error("ReducedCameraSystem: coupling after Finalize");
  if (a > b) std::swap(a, b);
  if (dims_[a] == 0 || dims_[b] == 0) return;
  const uint64_t key = Key(a, b);
  if (slots_.count(key)) return;
  slots_.emplace(key, static_cast<int>(slot_blocks_.size()));
  slot_blocks_.emplace_back(a, b);
}

void ReducedCameraSystem::Finalize() {
  blocks_.resize(slot_blocks_.size());
  for (size_t s = 0; s < slot_blocks_.size(); ++s) {
    blocks_[s] = Eigen::MatrixXd::Zero(dims_[slot_blocks_[s].first], dims_[slot_blocks_[s].second]);
  }
  finalized_ = true;
}

void ReducedCameraSystem::SetZero() {
  for (Eigen::MatrixXd& b : blocks_) b.setZero();
}

int ReducedCameraSystem::Slot(int a, int b) const {
  if (a > b) std::swap(a, b);
  const auto it = slots_.find(Key(a, b));
  if (it == slots_.end()) throw std::logic_error("ReducedCameraSystem: undeclared coupling");
  return it->second;
}

void ReducedCameraSystem::CopyValuesFrom(const ReducedCameraSystem& other) {
  for (size_t slot = 0; slot < blocks_.size(); ++slot) blocks_[slot] = other.blocks_[slot];
}

void ReducedCameraSystem::AddValuesFrom(const ReducedCameraSystem& other, size_t begin,
                                        size_t end) {
  for (size_t slot = begin; slot < end; ++slot) blocks_[slot] += other.blocks_[slot];
}

size_t ReducedCameraSystem::num_values() const {
  size_t values = 0;
  for (const Eigen::MatrixXd& b : blocks_) values += static_cast<size_t>(b.size());
  return values;
}

Eigen::VectorXd ReducedCameraSystem::Diagonal() const {
  Eigen::VectorXd d = Eigen::VectorXd::Zero(dim_);
  for (int i = 0; i < num_blocks(); ++i) {
    if (dims_[i] == 0) continue;
    d.segment(offsets_[i], dims_[i]) = blocks_[Slot(i, i)].diagonal();
  }
  return d;
}

void ReducedCameraSystem::AddToDiagonal(const Eigen::VectorXd& d) {
  for (int i = 0; i < num_blocks(); ++i) {
    if (dims_[i] == 0) continue;
    blocks_[Slot(i, i)].diagonal() += d.segment(offsets_[i], dims_[i]);
  }
}

bool ReducedCameraSystem::Solve(const Eigen::VectorXd& rhs, Eigen::VectorXd* x) const {
  if (dim_ == 0) {
    x->resize(0);
    return true;
  }
  if (dim_ <= options_.max_dense_dim) return SolveDense(rhs, x);
  if (dim_ <= options_.max_direct_dim) return SolveSparse(rhs, x);
  return SolveIterative(rhs, x);
}

Eigen::VectorXd ReducedCameraSystem::Multiply(const Eigen::VectorXd& x) const {
  Eigen::VectorXd y = Eigen::VectorXd::Zero(dim_);
  for (size_t s = 0; s < slot_blocks_.size(); ++s) {
    const auto [a, b] = slot_blocks_[s];
    y.segment(offsets_[a], dims_[a]).noalias() += blocks_[s] * x.segment(offsets_[b], dims_[b]);
    if (a != b)
      y.segment(offsets_[b], dims_[b]).noalias() +=
          blocks_[s].transpose() * x.segment(offsets_[a], dims_[a]);
  }
  return y;
}

bool ReducedCameraSystem::SolveDense(const Eigen::VectorXd& rhs, Eigen::VectorXd* x) const {
  Eigen::MatrixXd dense = Eigen::MatrixXd::Zero(dim_, dim_);
  for (size_t s = 0; s < slot_blocks_.size(); ++s) {
    const auto [a, b] = slot_blocks_[s];
    dense.block(offsets_[a], offsets_[b], dims_[a], dims_[b]) = blocks_[s];
    if (a != b) dense.block(offsets_[b], offsets_[a], dims_[b], dims_[a]) = blocks_[s].transpose();
  }
  Eigen::LLT<Eigen::MatrixXd> llt(dense);
  if (llt.info() != Eigen::Success) return false;
  *x = llt.solve(rhs);
  return x->allFinite();
}

bool ReducedCameraSystem::SolveSparse(const Eigen::VectorXd& rhs, Eigen::VectorXd* x) const {
  std::vector<Eigen::Triplet<double>> triplets;
  for (size_t s = 0; s < slot_blocks_.size(); ++s) {
    const auto [a, b] = slot_blocks_[s];
    const Eigen::MatrixXd& m = blocks_[s];
    // Lower triangle only, as SimplicialLDLT<..., Lower> reads it.
    for (int c = 0; c < m.cols(); ++c) {
      for (int r = 0; r < m.rows(); ++r) {
        const int row = offsets_[a] + r;
        const int col = offsets_[b] + c;
        if (row >= col)
          triplets.emplace_back(row, col, m(r, c));
        else
          triplets.emplace_back(col, row, m(r, c));
      }
    }
  }
  Eigen::SparseMatrix<double> sparse(dim_, dim_);
  sparse.setFromTriplets(triplets.begin(), triplets.end(), [](double, double b) {
    return b;
  });  // (r,c) of a diagonal block appear twice with equal values
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>, Eigen::Lower> ldlt(sparse);
  // LDL^T also factors indefinite matrices: positive definite means D > 0.
  if (ldlt.info() != Eigen::Success || !(ldlt.vectorD().array() > 0).all()) return false;
  *x = ldlt.solve(rhs);
  return ldlt.info() == Eigen::Success && x->allFinite();
}

bool ReducedCameraSystem::SolveIterative(const Eigen::VectorXd& rhs, Eigen::VectorXd* x) const {
  // Block-Jacobi preconditioner: each diagonal block's Cholesky factor.
  std::vector<Eigen::LLT<Eigen::MatrixXd>> preconditioner(dims_.size());
  for (int i = 0; i < num_blocks(); ++i) {
    if (dims_[i] == 0) continue;
    preconditioner[i].compute(blocks_[Slot(i, i)]);
    if (preconditioner[i].info() != Eigen::Success) return false;
  }
  auto precondition = [&](const Eigen::VectorXd& r) {
    Eigen::VectorXd z(dim_);
    for (int i = 0; i < num_blocks(); ++i) {
      if (dims_[i] == 0) continue;
      z.segment(offsets_[i], dims_[i]) = preconditioner[i].solve(r.segment(offsets_[i], dims_[i]));
    }
    return z;
  };
  // Conjugate gradients from x = 0 (Hestenes & Stiefel 1952; Saad, "Iterative Methods for
  // Sparse Linear Systems", alg. 9.1).
  x->setZero(dim_);
  Eigen::VectorXd r = rhs;
  Eigen::VectorXd z = precondition(r);
  Eigen::VectorXd p = z;
  double rz = r.dot(z);
  const double stop = options_.cg_tolerance * rhs.norm();
  for (int k = 0; k < options_.max_cg_iterations && r.norm() > stop; ++k) {
    const Eigen::VectorXd q = Multiply(p);
    const double pq = p.dot(q);
    // S is not positive definite along p.
    if (!(pq > 0)) return false;
    const double alpha = rz / pq;
    *x += alpha * p;
    r -= alpha * q;
    z = precondition(r);
    const double rz_next = r.dot(z);
    p = z + (rz_next / rz) * p;
    rz = rz_next;
  }
  return x->allFinite();
}

}  // namespace edgesfm
