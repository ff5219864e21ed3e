// The reduced camera system of bundle adjustment: after the 3x3 point blocks are
// eliminated by the Schur complement (Triggs et al., "Bundle Adjustment -- A
// Modern Synthesis", 2000, sec. 6.1), the normal equations couple only camera
// unknowns (poses and intrinsics). This class stores that symmetric matrix as
// dense blocks on a fixed sparsity pattern (two camera blocks are coupled when
// they see a common point) and solves it: dense Cholesky for small systems, Eigen's
// sparse Cholesky (SimplicialLDLT) beyond `max_dense_dim` unknowns, and beyond
// `max_direct_dim` conjugate gradients preconditioned by the inverse diagonal blocks
// (Ceres' ITERATIVE_SCHUR with SCHUR_JACOBI, which COLMAP picks above 900 images: the
// factorisation's fill-in outgrows memory and time there, a matrix-vector product
// stays proportional to the couplings).
#pragma once

#include <Eigen/Core>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace edgesfm {

struct ReducedCameraSolverOptions {
  int max_dense_dim = 1500;
  // COLMAP's 900 images of 6 pose unknowns.
  int max_direct_dim = 5400;
  // Conjugate gradients stop at this relative residual or after this many iterations
  // (COLMAP: 100); an unconverged step is still a descent direction for the caller.
  double cg_tolerance = 1e-8;
  int max_cg_iterations = 100;
};

class ReducedCameraSystem {
 public:
  // `block_dims[i]` is the number of unknowns of camera block i.
  explicit ReducedCameraSystem(const std::vector<int>& block_dims,
                               ReducedCameraSolverOptions options = ReducedCameraSolverOptions());

  // Declares that blocks a and b are coupled (call before Finalize).
  void AddCoupling(int a, int b);
  // Freezes the sparsity pattern (the diagonal blocks are always present).
  void Finalize();

  int dim() const { return dim_; }
  int block_offset(int i) const { return offsets_[i]; }
  int block_dim(int i) const { return dims_[i]; }
  int num_blocks() const { return static_cast<int>(dims_.size()); }
  // Stored blocks (declared couplings, diagonal included) and the numbers they hold.
  size_t num_slots() const { return blocks_.size(); }
  size_t num_values() const;

  void SetZero();
  // Adds M (dim_a x dim_b, any Eigen expression: products are evaluated straight into the
  // block, without a temporary) to block (a, b) and, by symmetry, M^T to (b, a). For a == b,
  // M must be symmetric. The coupling must have been declared.
  template <typename Derived>
  void AddBlock(int a, int b, const Eigen::MatrixBase<Derived>& m) {
    if (dims_[a] == 0 || dims_[b] == 0) return;
    Eigen::MatrixXd& block = blocks_[Slot(a, b)];
    if (a <= b) {
      block.noalias() += m;
    } else {
      block.noalias() += m.transpose();
    }
  }
  // Slot of a declared coupling, to avoid repeated lookups in hot loops.
  int Slot(int a, int b) const;
  // Adds M (dim_lo x dim_hi, lo <= hi) at a slot from Slot(lo, hi).
  Eigen::MatrixXd& SlotBlock(int slot) { return blocks_[slot]; }
  // Takes another system's values (same pattern), reusing this one's storage.
  void CopyValuesFrom(const ReducedCameraSystem& other);
  // Adds another system's blocks in slots [begin, end) to this one's (same pattern).
  void AddValuesFrom(const ReducedCameraSystem& other, size_t begin, size_t end);
  // The diagonal of the whole matrix, and adding to it (LM damping).
  Eigen::VectorXd Diagonal() const;
  void AddToDiagonal(const Eigen::VectorXd& d);

  // Solves S x = rhs; false if S is not positive definite.
  bool Solve(const Eigen::VectorXd& rhs, Eigen::VectorXd* x) const;
  // y = S x.
  Eigen::VectorXd Multiply(const Eigen::VectorXd& x) const;

 private:
  bool SolveDense(const Eigen::VectorXd& rhs, Eigen::VectorXd* x) const;
  bool SolveSparse(const Eigen::VectorXd& rhs, Eigen::VectorXd* x) const;
  bool SolveIterative(const Eigen::VectorXd& rhs, Eigen::VectorXd* x) const;

  static uint64_t Key(int a, int b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

  std::vector<int> dims_;
  std::vector<int> offsets_;
  int dim_ = 0;
  ReducedCameraSolverOptions options_;
  std::vector<std::pair<int, int>> slot_blocks_;  // (lo, hi) per slot
  std::unordered_map<uint64_t, int> slots_;
  std::vector<Eigen::MatrixXd> blocks_;
  bool finalized_ = false;
};

}  // namespace edgesfm
