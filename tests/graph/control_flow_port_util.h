// Test helpers for the ports of TensorFlow's control_flow_ops_py_test.py:
// tf.cond, tf.while_loop and tf.gradients as one-line C++ calls, and a
// fixture that runs what a test built in one Session.
#ifndef RILL_TESTS_GRAPH_CONTROL_FLOW_PORT_UTIL_H_
#define RILL_TESTS_GRAPH_CONTROL_FLOW_PORT_UTIL_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill::testing {

using BranchBody = std::function<std::vector<Output>(const Scope&)>;
using LoopCond = std::function<Output(const Scope&, const std::vector<Output>&)>;
using LoopBody = std::function<std::vector<Output>(const Scope&, const std::vector<Output>&)>;

// tf.cond with a branch per lambda; on error the scope keeps it and the
// results are null.
inline std::vector<Output> CondN(const Scope& s, const Output& pred, const BranchBody& then_fn,
                                 const BranchBody& else_fn) {
  const auto wrap = [](const BranchBody& fn) {
    return [&fn](const Scope& b, std::vector<Output>* out) {
      *out = fn(b);
      return b.status();
    };
  };
  absl::StatusOr<std::vector<Output>> out = ops::Cond(s, pred, wrap(then_fn), wrap(else_fn));
  if (!out.ok()) {
    s.UpdateStatus(out.status());
    return {};
  }
  return *std::move(out);
}

inline Output Cond(const Scope& s, const Output& pred,
                   const std::function<Output(const Scope&)>& then_fn,
                   const std::function<Output(const Scope&)>& else_fn) {
  const std::vector<Output> out = CondN(
      s, pred, [&](const Scope& b) { return std::vector<Output>{then_fn(b)}; },
      [&](const Scope& b) { return std::vector<Output>{else_fn(b)}; });
  return out.empty() ? Output() : out[0];
}

// tf.while_loop; on error the scope keeps it and the results are null.
inline std::vector<Output> While(const Scope& s, const std::vector<Output>& inputs,
                                 const LoopCond& cond, const LoopBody& body,
                                 int parallel_iterations = 10) {
  std::vector<Output> outputs;
  const absl::Status status = ops::WhileLoop(
      s, inputs,
      [&](const Scope& c, const std::vector<Output>& in, Output* out) {
        *out = cond(c, in);
        return c.status();
      },
      [&](const Scope& b, const std::vector<Output>& in, std::vector<Output>* out) {
        *out = body(b, in);
        return b.status();
      },
      &outputs, {.parallel_iterations = parallel_iterations});
  if (!status.ok()) {
    s.UpdateStatus(status);
    return std::vector<Output>(inputs.size());
  }
  return outputs;
}

// tf.gradients; on error the scope keeps it and the results are null.
inline std::vector<Output> Gradients(const Scope& s, const std::vector<Output>& ys,
                                     const std::vector<Output>& xs) {
  absl::StatusOr<std::vector<Output>> grads = AddGradients(s, ys, xs);
  if (!grads.ok()) {
    s.UpdateStatus(grads.status());
    return std::vector<Output>(xs.size());
  }
  return *std::move(grads);
}

inline Output Int(const Scope& s, int32_t v) {
  return ops::Const(s, Tensor::Scalar<int32_t>(v), DT_INT32);
}
inline Output Float(const Scope& s, float v) {
  return ops::Const(s, Tensor::Scalar<float>(v), DT_FLOAT);
}
inline Output Bool(const Scope& s, bool v) {
  return ops::Const(s, Tensor::Scalar<bool>(v), DT_BOOL);
}
inline Output Ints(const Scope& s, std::vector<int32_t> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return ops::Const(s, Tensor::FromVector<int32_t>(std::move(v), TensorShape({n})), DT_INT32);
}
inline Output Floats(const Scope& s, std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return ops::Const(s, Tensor::FromVector<float>(std::move(v), TensorShape({n})), DT_FLOAT);
}

// A fetched tensor's elements; none for a failed fetch (the failure is
// reported where the run failed).
template <typename T>
std::vector<T> ValuesOf(const Tensor& t) {
  return t.IsInitialized() ? ::rill::testing::Values<T>(t) : std::vector<T>();
}

template <typename T>
T ScalarOf(const Tensor& t) {
  return t.IsInitialized() && t.NumElements() == 1 ? t.data<T>()[0] : T(-1);
}

class ControlFlowPortTest : public ::testing::Test {
 protected:
  // One session over everything built so far, made at the first run (so
  // that variables keep their values between runs).
  absl::StatusOr<std::vector<Tensor>> TryRun(
      const std::vector<Output>& fetches,
      const std::vector<std::pair<std::string, Tensor>>& feeds = {},
      const std::vector<Operation>& targets = {}, RunOptions options = {}) {
    RETURN_IF_ERROR(root_.status());
    // A loop that a wrong graph would never end fails the test instead of
    // hanging it.
    if (options.timeout_in_ms == 0) options.timeout_in_ms = 60'000;
    if (session_ == nullptr) {
      ASSIGN_OR_RETURN(GraphDef def, root_.ToGraphDef());
      ASSIGN_OR_RETURN(session_, NewSession(SessionOptions(), def));
    }
    std::vector<std::string> fetch_names;
    for (const Output& fetch : fetches) fetch_names.push_back(fetch.name());
    std::vector<std::string> target_names;
    for (const Operation& target : targets) target_names.push_back(target.name());
    return session_->Run(options, feeds, fetch_names, target_names, nullptr);
  }

  std::vector<Tensor> Run(const std::vector<Output>& fetches,
                          const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
    absl::StatusOr<std::vector<Tensor>> out = TryRun(fetches, feeds);
    EXPECT_OK(out);
    return out.ok() ? *std::move(out) : std::vector<Tensor>(fetches.size());
  }

  // Runs the variables' initializers.
  void Initialize() { ASSERT_OK(TryRun({}, {}, {GlobalVariablesInitializer(root_)})); }

  float RunFloat(const Output& fetch,
                 const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
    const std::vector<Tensor> out = Run({fetch}, feeds);
    return ScalarOf<float>(out[0]);
  }
  int32_t RunInt(const Output& fetch,
                 const std::vector<std::pair<std::string, Tensor>>& feeds = {}) {
    const std::vector<Tensor> out = Run({fetch}, feeds);
    return ScalarOf<int32_t>(out[0]);
  }

  Scope root_ = ops::NewRootScope();
  std::unique_ptr<Session> session_;
};

inline Output Less(const Scope& s, const Output& x, int32_t y) { return ops::Less(s, x, y); }
inline Output Less(const Scope& s, const Output& x, float y) { return ops::Less(s, x, y); }

}  // namespace rill::testing

#endif  // RILL_TESTS_GRAPH_CONTROL_FLOW_PORT_UTIL_H_
