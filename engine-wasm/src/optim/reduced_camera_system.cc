#include "optim/reduced_camera_system.h"

#include <Eigen/Cholesky>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>
#include <algorithm>
#include <stdexcept>

namespace edgesfm {

ReducedCameraSystem::ReducedCameraSystem(const std::vector<int>& block_dims, int max_dense_dim)
    : dims_(block_dims), max_dense_dim_(max_dense_dim) {
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

void ReducedCameraSystem::AddBlock(int a, int b, const Eigen::MatrixXd& m) {
  if (dims_[a] == 0 || dims_[b] == 0) return;
  const int slot = Slot(a, b);
  if (a <= b) {
    blocks_[slot] += m;
  } else {
    blocks_[slot] += m.transpose();
  }
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
  if (dim_ <= max_dense_dim_) {
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
  std::vector<Eigen::Triplet<double>> triplets;
  for (size_t s = 0; s < slot_blocks_.size(); ++s) {
    const auto [a, b] = slot_blocks_[s];
    const Eigen::MatrixXd& m = blocks_[s];
    // Lower triangle only, as SimplicialLDLT<..., Lower> reads it.
    for (int c = 0; c < m.cols(); ++c) {
      for (int r = 0; r < m.rows(); ++r) {
        const int row = offsets_[a] + r;
        const int col = offsets_[b] + c;
        if (row >= col) triplets.emplace_back(row, col, m(r, c));
        else triplets.emplace_back(col, row, m(r, c));
      }
    }
  }
  Eigen::SparseMatrix<double> sparse(dim_, dim_);
  sparse.setFromTriplets(triplets.begin(), triplets.end(),
                         [](double, double b) { return b; });  // (r,c) of a diagonal block appear twice with equal values
  Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>, Eigen::Lower> ldlt(sparse);
  if (ldlt.info() != Eigen::Success) return false;
  *x = ldlt.solve(rhs);
  return ldlt.info() == Eigen::Success && x->allFinite();
}

}  // namespace edgesfm
