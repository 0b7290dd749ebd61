#pragma once
// Comparison of kernel outputs with an fp64 reference, shared by every mechanism's check().
#include <cmath>
#include <cstdint>

#include "core/bf16.hpp"
#include "mechanisms/mechanism.hpp"

namespace arch_bench {

// Accumulates max |out - ref| and max |ref| over many rows; finish() gives the Accuracy.
class ErrorAccumulator {
 public:
  template <class T>
  void add_row(const T* out, const double* ref, std::int64_t count) {
    for (std::int64_t i = 0; i < count; ++i) {
      const double value = to_float(out[i]);
      if (!std::isfinite(value)) finite_ = false;
      const double diff = std::fabs(value - ref[i]);
      if (diff > max_abs_ || std::isnan(diff)) max_abs_ = std::isnan(diff) ? INFINITY : diff;
      max_ref_ = std::fmax(max_ref_, std::fabs(ref[i]));
    }
    ++rows_;
  }
  // Folds in another accumulator's rows: every measure is a max, a conjunction or a count, so the
  // result does not depend on how the rows were split (the parallel per-head checks rely on it).
  void merge(const ErrorAccumulator& other) {
    finite_ = finite_ && other.finite_;
    max_abs_ = std::fmax(max_abs_, other.max_abs_);
    max_ref_ = std::fmax(max_ref_, other.max_ref_);
    rows_ += other.rows_;
  }
  Accuracy finish() const {
    Accuracy accuracy;
    accuracy.output_finite = finite_;
    accuracy.max_abs_error = max_abs_;
    accuracy.max_rel_error = max_ref_ > 0 ? max_abs_ / max_ref_ : max_abs_;
    accuracy.rows_checked = rows_;
    return accuracy;
  }

 private:
  bool finite_ = true;
  double max_abs_ = 0;
  double max_ref_ = 0;
  std::int64_t rows_ = 0;
};

}  // namespace arch_bench
