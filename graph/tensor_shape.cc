#include "graph/tensor_shape.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

// The unchecked constructors and mutators abort on a violated REQUIRES:
// callers with untrusted input go through Create/FromProto instead.
[[noreturn]] void Fatal(const std::string& message) {
  std::fprintf(stderr, "rill: %s\n", message.c_str());
  std::abort();
}

std::string DimsString(absl::Span<const int64_t> dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ',';
    out += dims[i] == -1 ? std::string("?") : std::to_string(dims[i]);
  }
  out += ']';
  return out;
}

// Checks rank, per-dimension minimum and that the product of the known
// (non-negative) dimensions fits in int64.
absl::Status ValidateDims(absl::Span<const int64_t> dims, int64_t min_dim) {
  if (dims.size() > static_cast<size_t>(kMaxTensorRank)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shape has %d dimensions, more than the maximum of %d", dims.size(), kMaxTensorRank));
  }
  int64_t product = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < min_dim) {
      return absl::InvalidArgumentError(
          absl::StrFormat("dimension %d of shape [%s] has size %d; sizes must be >= %d", i,
                          absl::StrJoin(dims, ","), dims[i], min_dim));
    }
    if (dims[i] >= 0 && __builtin_mul_overflow(product, dims[i], &product)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "shape [%s] has too many elements: the count overflows int64", absl::StrJoin(dims, ",")));
    }
  }
  return absl::OkStatus();
}

void CheckDims(absl::Span<const int64_t> dims, int64_t min_dim) {
  absl::Status status = ValidateDims(dims, min_dim);
  if (!status.ok()) Fatal(std::string(status.message()));
}

}  // namespace

TensorShape::TensorShape(std::initializer_list<int64_t> dims)
    : TensorShape(absl::Span<const int64_t>(dims.begin(), dims.size())) {}

TensorShape::TensorShape(absl::Span<const int64_t> dims) : dims_(dims.begin(), dims.end()) {
  CheckDims(dims_, 0);
  Recompute();
}

absl::StatusOr<TensorShape> TensorShape::Create(absl::Span<const int64_t> dims) {
  RETURN_IF_ERROR(ValidateDims(dims, 0));
  return TensorShape(dims);
}

absl::StatusOr<TensorShape> TensorShape::FromProto(const TensorShapeProto& proto) {
  if (proto.unknown_rank()) {
    return absl::InvalidArgumentError("shape has unknown rank where a fully defined one is needed");
  }
  std::vector<int64_t> dims;
  dims.reserve(proto.dim_size());
  for (const auto& dim : proto.dim()) dims.push_back(dim.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dimension %d of shape %s is unknown where a fully defined shape is needed", i,
          DimsString(dims)));
    }
  }
  return Create(dims);
}

void TensorShape::AddDim(int64_t size) {
  dims_.push_back(size);
  CheckDims(dims_, 0);
  Recompute();
}

void TensorShape::set_dim(int i, int64_t size) {
  if (i < 0 || i >= dims()) {
    Fatal(absl::StrFormat("set_dim(%d) on shape %s", i, DebugString()));
  }
  dims_[i] = size;
  CheckDims(dims_, 0);
  Recompute();
}

void TensorShape::RemoveDim(int i) {
  if (i < 0 || i >= dims()) {
    Fatal(absl::StrFormat("RemoveDim(%d) on shape %s", i, DebugString()));
  }
  dims_.erase(dims_.begin() + i);
  Recompute();
}

void TensorShape::AsProto(TensorShapeProto* proto) const {
  proto->Clear();
  for (int64_t d : dims_) proto->add_dim()->set_size(d);
}

TensorShapeProto TensorShape::AsProto() const {
  TensorShapeProto proto;
  AsProto(&proto);
  return proto;
}

std::string TensorShape::DebugString() const { return DimsString(dims_); }

void TensorShape::Recompute() {
  num_elements_ = 1;
  for (int64_t d : dims_) num_elements_ *= d;
}

PartialTensorShape::PartialTensorShape(std::initializer_list<int64_t> dims)
    : PartialTensorShape(absl::Span<const int64_t>(dims.begin(), dims.size())) {}

PartialTensorShape::PartialTensorShape(absl::Span<const int64_t> dims)
    : unknown_rank_(false), dims_(dims.begin(), dims.end()) {
  CheckDims(dims_, -1);
}

PartialTensorShape::PartialTensorShape(const TensorShape& shape)
    : unknown_rank_(false), dims_(shape.dim_sizes().begin(), shape.dim_sizes().end()) {}

PartialTensorShape PartialTensorShape::UnknownOfRank(int rank) {
  if (rank < 0 || rank > kMaxTensorRank) Fatal(absl::StrFormat("UnknownOfRank(%d)", rank));
  return PartialTensorShape(std::vector<int64_t>(rank, -1));
}

absl::StatusOr<PartialTensorShape> PartialTensorShape::Create(absl::Span<const int64_t> dims) {
  RETURN_IF_ERROR(ValidateDims(dims, -1));
  return PartialTensorShape(dims);
}

absl::StatusOr<PartialTensorShape> PartialTensorShape::FromProto(const TensorShapeProto& proto) {
  if (proto.unknown_rank()) {
    if (proto.dim_size() > 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("shape has unknown_rank set and also %d dimensions", proto.dim_size()));
    }
    return Unknown();
  }
  std::vector<int64_t> dims;
  dims.reserve(proto.dim_size());
  for (const auto& dim : proto.dim()) dims.push_back(dim.size());
  return Create(dims);
}

bool PartialTensorShape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t PartialTensorShape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

void PartialTensorShape::AddDim(int64_t size) {
  if (unknown_rank_) Fatal("AddDim on a shape of unknown rank");
  dims_.push_back(size);
  CheckDims(dims_, -1);
}

absl::StatusOr<TensorShape> PartialTensorShape::AsTensorShape() const {
  if (!IsFullyDefined()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shape %s is not fully defined", DebugString()));
  }
  return TensorShape(dims_);
}

void PartialTensorShape::AsProto(TensorShapeProto* proto) const {
  proto->Clear();
  if (unknown_rank_) {
    proto->set_unknown_rank(true);
    return;
  }
  for (int64_t d : dims_) proto->add_dim()->set_size(d);
}

TensorShapeProto PartialTensorShape::AsProto() const {
  TensorShapeProto proto;
  AsProto(&proto);
  return proto;
}

bool PartialTensorShape::IsCompatibleWith(const PartialTensorShape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (dims_.size() != other.dims_.size()) return false;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

absl::StatusOr<PartialTensorShape> PartialTensorShape::MergeWith(
    const PartialTensorShape& other) const {
  if (!IsCompatibleWith(other)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("incompatible shapes: %s vs. %s", DebugString(), other.DebugString()));
  }
  if (unknown_rank_) return other;
  if (other.unknown_rank_) return *this;
  PartialTensorShape merged = *this;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (merged.dims_[i] < 0) merged.dims_[i] = other.dims_[i];
  }
  return merged;
}

std::string PartialTensorShape::DebugString() const {
  return unknown_rank_ ? "<unknown>" : DimsString(dims_);
}

absl::StatusOr<PartialTensorShape> BroadcastShapes(const PartialTensorShape& a,
                                                   const PartialTensorShape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return PartialTensorShape::Unknown();
  const int rank = std::max(a.dims(), b.dims());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    // Aligned from the right; a missing leading dimension acts as 1.
    const int ia = a.dims() - rank + i;
    const int ib = b.dims() - rank + i;
    const int64_t da = ia >= 0 ? a.dim_size(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim_size(ib) : 1;
    if (da == 1) {
      dims[i] = db;
    } else if (db == 1) {
      dims[i] = da;
    } else if (da < 0 || db < 0) {
      // The unknown side must be 1 or equal to the known one; either way
      // the result is the known size (unknown when both are).
      dims[i] = std::max(da, db);
    } else if (da == db) {
      dims[i] = da;
    } else {
      return absl::InvalidArgumentError(
          absl::StrFormat("Incompatible shapes: %s vs. %s", a.DebugString(), b.DebugString()));
    }
  }
  // Each side's sizes fit in int64, but their broadcast may not.
  return PartialTensorShape::Create(dims);
}

}  // namespace rill
