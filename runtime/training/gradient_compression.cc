#include "runtime/training/gradient_compression.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "graph/node_builder.h"
#include "graph/status_macros.h"
#include "ops/ops.h"

namespace rill {
namespace {

std::optional<DataType> ParseWireType(std::string_view name) {
  if (name == "float16" || name == "fp16" || name == "half") return DT_HALF;
  if (name == "bfloat16" || name == "bf16") return DT_BFLOAT16;
  return std::nullopt;
}

// The gradient the variable's task receives: the largest entries of the
// gradient plus the residual, sent as indices and values and stitched into
// a dense gradient there; the rest becomes the next residual.
// `warmup_step`: the worker's step count (from 1), with a warm-up; null without.
Output TopK(const Scope& wire, const GradientAndVariable& pair, const TensorShape& shape,
            const GradientCompression& compression, const Output* warmup_step,
            std::vector<Variable>* residuals) {
  const int64_t n = shape.num_elements();
  const int32_t final_k = static_cast<int32_t>(
      std::clamp<int64_t>(std::llround(compression.top_k * static_cast<double>(n)), 1, n));
  const Scope worker = wire.WithDevice(compression.local_device);
  Output k;
  if (warmup_step == nullptr) {
    k = ops::Const(worker, Tensor::Scalar<int32_t>(final_k), DT_INT32);
  } else {
    // n * top_k^(min(step / warmup, 1)), never under the final k.
    const Output progress =
        ops::Minimum(worker,
                     ops::Div(worker, ops::Cast(worker, *warmup_step, DT_FLOAT),
                              static_cast<float>(compression.top_k_warmup_steps)),
                     1.f);
    const Output fraction = ops::Pow(
        worker,
        ops::Const(worker, Tensor::Scalar<float>(static_cast<float>(compression.top_k)), DT_FLOAT),
        progress);
    k = ops::Cast(
        worker.WithOpName("k"),
        ops::Maximum(worker, ops::Round(worker, ops::Mul(worker, fraction, static_cast<float>(n))),
                     static_cast<float>(final_k)),
        DT_INT32);
  }
  const Variable residual(worker, "residual", Tensor(DT_FLOAT, shape));
  residuals->push_back(residual);
  const Output flat =
      ops::Reshape(worker, ops::Add(worker, residual, pair.gradient), ops::Input({int64_t{-1}}));
  const ops::TopKV2 top(worker, ops::Abs(worker, flat), k, ops::TopKV2::Sorted(false));
  const Output zeros = ops::Fill(worker, ops::Shape(worker, top.indices), 0.f);
  const Output values = ops::Gather(worker, flat, top.indices);
  // What is not sent stays: the sum with the sent entries zeroed.
  const Output all = ops::Range(worker, 0, static_cast<int32_t>(n), 1);
  const Output left = ops::DynamicStitch(worker, {ops::Input(all), ops::Input(top.indices)},
                                         {ops::Input(flat), ops::Input(zeros)});
  const Output keep = ops::Assign(worker.WithOpName("keep"), residual.ref(),
                                  ops::Reshape(worker, left, ops::Shape(worker, pair.gradient)));
  // The values leave only with the residual kept.
  Output sent =
      ops::Identity(worker.WithOpName("values").WithControlDependencies({keep.op()}), values);
  if (compression.wire_type != DT_INVALID) {
    sent = ops::Cast(worker.WithOpName("narrow"), sent, compression.wire_type);
  }

  const Scope beside = wire.ColocateOnlyWith(pair.variable.ref().op());
  if (compression.wire_type != DT_INVALID) {
    sent = ops::Cast(beside.WithOpName("wide"), sent, DT_FLOAT);
  }
  const Output dense = ops::DynamicStitch(
      beside,
      {ops::Input(ops::Range(beside, 0, static_cast<int32_t>(n), 1)), ops::Input(top.indices)},
      {ops::Input(ops::Fill(beside, {n}, 0.f)), ops::Input(sent)});
  return ops::Reshape(beside.WithOpName("dense"), dense,
                      ops::Input(Tensor::FromVector<int64_t>(
                          shape.dim_sizes(), TensorShape({static_cast<int64_t>(shape.dims())}))));
}

}  // namespace

absl::StatusOr<GradientCompression> ParseGradientCompression(std::string_view text) {
  GradientCompression compression;
  if (text == "none") return compression;
  const auto refused = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "gradient compression '%s': expected none, float16 (fp16), bfloat16 (bf16) or "
        "topk:FRACTION[:WARMUP_STEPS] with FRACTION in (0, 1), optionally followed by +fp16 or "
        "+bf16",
        text));
  };
  std::string_view rest = text;
  if (rest.starts_with("topk:")) {
    rest.remove_prefix(5);
    const size_t plus = rest.find('+');
    std::string_view fraction = rest.substr(0, plus);
    if (const size_t colon = fraction.find(':'); colon != std::string_view::npos) {
      if (!absl::SimpleAtoi(std::string(fraction.substr(colon + 1)),
                            &compression.top_k_warmup_steps) ||
          compression.top_k_warmup_steps < 0) {
        return refused();
      }
      fraction = fraction.substr(0, colon);
    }
    if (!absl::SimpleAtod(std::string(fraction), &compression.top_k) ||
        !(compression.top_k > 0 && compression.top_k < 1)) {
      return refused();
    }
    if (plus == std::string_view::npos) return compression;
    rest.remove_prefix(plus + 1);
  }
  const std::optional<DataType> wire_type = ParseWireType(rest);
  if (!wire_type.has_value()) return refused();
  compression.wire_type = *wire_type;
  return compression;
}

absl::StatusOr<CompressedGradients> CompressGradients(const Scope& scope,
                                                      std::vector<GradientAndVariable> gradients,
                                                      const GradientCompression& compression) {
  CompressedGradients out;
  if (compression.wire_type == DT_INVALID && compression.top_k == 0) {
    out.gradients = std::move(gradients);
    return out;
  }
  if (compression.wire_type != DT_INVALID && compression.wire_type != DT_HALF &&
      compression.wire_type != DT_BFLOAT16) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "gradients travel as float16 or bfloat16, not %s", DataTypeString(compression.wire_type)));
  }
  if (!(compression.top_k >= 0 && compression.top_k < 1)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "top-k keeps a fraction in (0, 1) of each gradient, not %g", compression.top_k));
  }
  if (compression.top_k > 0 && compression.local_device.empty()) {
    return absl::InvalidArgumentError(
        "top-k gradient compression needs the worker's device for its residuals (local_device)");
  }
  if (compression.top_k_warmup_steps < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "top-k warms up over a count of steps, not %d", compression.top_k_warmup_steps));
  }
  // One count for every gradient: it moves once a step.
  std::optional<Output> warmup_step;
  const auto count_steps = [&] {
    if (warmup_step.has_value() || compression.top_k_warmup_steps == 0) return;
    const Scope counter = scope.NewSubScope("top_k").WithDevice(compression.local_device);
    const Variable steps(counter, "steps", Tensor::FromVector<int64_t>({0}, {}));
    out.residuals.push_back(steps);
    warmup_step = ops::AssignAdd(counter.WithOpName("step"), steps.ref(), int64_t{1});
  };
  std::set<std::string> unmatched = compression.variables;
  for (GradientAndVariable& pair : gradients) {
    const std::string& name = pair.variable.name();
    if (!compression.variables.empty()) {
      if (unmatched.erase(name) == 0) continue;
      if (pair.gradient.node() == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrFormat("variable '%s' has no gradient to compress", name));
      }
    }
    if (pair.gradient.node() == nullptr || BaseType(pair.gradient.type()) != DT_FLOAT) continue;
    if (compression.top_k > 0) {
      // A gradient has its variable's shape, which is known where the
      // gradient's inferred one may not be.
      absl::StatusOr<TensorShape> shape = pair.variable.ref().shape().AsTensorShape();
      if (!shape.ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("top-k: variable '%s' has shape %s, which is not fully known", name,
                            pair.variable.ref().shape().DebugString()));
      }
      if (shape->num_elements() >= compression.top_k_min_elements) {
        count_steps();
        pair.gradient = TopK(scope.NewSubScope(name + "/wire"), pair, *shape, compression,
                             warmup_step.has_value() ? &*warmup_step : nullptr, &out.residuals);
        continue;
      }
      if (compression.wire_type == DT_INVALID) continue;
    }
    const Scope wire = scope.NewSubScope(name + "/wire");
    const Output narrow = ops::Cast(wire.ColocateWith(pair.gradient.op()).WithOpName("narrow"),
                                    pair.gradient, compression.wire_type);
    pair.gradient = ops::Cast(wire.ColocateOnlyWith(pair.variable.ref().op()).WithOpName("wide"),
                              narrow, DT_FLOAT);
  }
  if (!unmatched.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "gradient compression names variable '%s', which is not among those trained",
        *unmatched.begin()));
  }
  if (!out.residuals.empty()) {
    NodeBuilder init(scope.WithDevice(compression.local_device).WithOpName("residuals_init"),
                     "NoOp");
    for (const Variable& residual : out.residuals) init.ControlInput(residual.initializer());
    out.residuals_init = init.Finalize();
  }
  RETURN_IF_ERROR(scope.status());
  out.gradients = std::move(gradients);
  return out;
}

}  // namespace rill
