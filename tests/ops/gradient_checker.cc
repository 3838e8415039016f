#include "tests/ops/gradient_checker.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "runtime/session.h"

namespace rill::testing {
namespace {

double Get(const Tensor& t, int64_t i) {
  return t.dtype() == DT_FLOAT ? static_cast<double>(t.data<float>()[i]) : t.data<double>()[i];
}

void Set(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DT_FLOAT) {
    t.data<float>()[i] = static_cast<float>(v);
  } else {
    t.data<double>()[i] = v;
  }
}

using Feeds = std::vector<std::pair<std::string, Tensor>>;

std::vector<std::string> NamesOf(const std::vector<Output>& outputs) {
  std::vector<std::string> names;
  for (const Output& o : outputs) names.push_back(o.name());
  return names;
}

}  // namespace

GradientChecker::GradientChecker(DataType dtype, uint32_t seed)
    : dtype_(dtype),
      delta_(dtype == DT_FLOAT ? 1e-3 : 1e-6),
      rng_(seed),
      scope_(ops::NewRootScope()) {}

Output GradientChecker::Input(const Tensor& value) {
  const Output x =
      ops::Placeholder(scope_.WithOpName("x"), dtype_, ops::Placeholder::Shape(value.shape()));
  inputs_.push_back(x);
  values_.push_back(value);
  return x;
}

Tensor GradientChecker::RandomTensor(const TensorShape& shape, double lo, double hi,
                                     double min_abs) {
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t(dtype_, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    double v;
    do {
      v = dist(rng_);
    } while (std::abs(v) < min_abs);
    Set(t, i, v);
  }
  return t;
}

Output GradientChecker::RandomInput(const TensorShape& shape, double lo, double hi,
                                    double min_abs) {
  return Input(RandomTensor(shape, lo, hi, min_abs));
}

absl::StatusOr<double> GradientChecker::MaxError(const std::vector<Output>& ys) {
  // dy placeholders, fed one-hot: each run gives one row of the Jacobian.
  std::vector<Output> dys;
  for (const Output& y : ys) {
    dys.push_back(ops::Placeholder(scope_.WithOpName("dy"), BaseType(y.type())));
  }
  ASSIGN_OR_RETURN(std::vector<Output> dxs, AddGradients(scope_, ys, inputs_, dys));
  ASSIGN_OR_RETURN(GraphDef graph, scope_.ToGraphDef());
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(SessionOptions(), graph));

  Feeds feeds;
  for (size_t i = 0; i < inputs_.size(); ++i) feeds.emplace_back(inputs_[i].name(), values_[i]);
  const std::vector<std::string> y_names = NamesOf(ys);
  ASSIGN_OR_RETURN(std::vector<Tensor> y_values, session->Run(feeds, y_names));

  std::vector<int64_t> y_offsets;
  int64_t num_y = 0;
  for (const Tensor& y : y_values) {
    if (y.dtype() != DT_FLOAT && y.dtype() != DT_DOUBLE) {
      return absl::InvalidArgumentError("the checker needs float or double ys");
    }
    y_offsets.push_back(num_y);
    num_y += y.NumElements();
  }
  std::vector<int64_t> x_offsets;
  int64_t num_x = 0;
  for (const Tensor& x : values_) {
    x_offsets.push_back(num_x);
    num_x += x.NumElements();
  }
  // Entry (x element, y element).
  std::vector<double> theory(num_x * num_y, 0.0);
  std::vector<double> numeric(num_x * num_y, 0.0);

  const std::vector<std::string> dx_names = NamesOf(dxs);
  for (size_t j = 0; j < ys.size(); ++j) {
    for (int64_t k = 0; k < y_values[j].NumElements(); ++k) {
      Feeds run_feeds = feeds;
      for (size_t d = 0; d < ys.size(); ++d) {
        Tensor one_hot(y_values[d].dtype(), y_values[d].shape());
        if (d == j) Set(one_hot, k, 1.0);
        run_feeds.emplace_back(dys[d].name(), one_hot);
      }
      ASSIGN_OR_RETURN(std::vector<Tensor> grads, session->Run(run_feeds, dx_names));
      for (size_t i = 0; i < grads.size(); ++i) {
        if (grads[i].NumElements() != values_[i].NumElements()) {
          return absl::InternalError(absl::StrFormat("gradient %s has shape %s, its input %s",
                                                     dx_names[i], grads[i].shape().DebugString(),
                                                     values_[i].shape().DebugString()));
        }
        for (int64_t m = 0; m < grads[i].NumElements(); ++m) {
          theory[(x_offsets[i] + m) * num_y + y_offsets[j] + k] = Get(grads[i], m);
        }
      }
    }
  }

  for (size_t i = 0; i < values_.size(); ++i) {
    for (int64_t m = 0; m < values_[i].NumElements(); ++m) {
      std::vector<Tensor> sides[2];
      for (int side = 0; side < 2; ++side) {
        Feeds run_feeds = feeds;
        Tensor moved = values_[i].DeepCopy();
        Set(moved, m, Get(moved, m) + (side == 0 ? delta_ : -delta_));
        run_feeds[i].second = moved;
        ASSIGN_OR_RETURN(sides[side], session->Run(run_feeds, y_names));
      }
      for (size_t j = 0; j < ys.size(); ++j) {
        for (int64_t k = 0; k < y_values[j].NumElements(); ++k) {
          numeric[(x_offsets[i] + m) * num_y + y_offsets[j] + k] =
              (Get(sides[0][j], k) - Get(sides[1][j], k)) / (2 * delta_);
        }
      }
    }
  }

  double max_error = 0;
  double max_numeric = 0;
  for (size_t e = 0; e < theory.size(); ++e) {
    max_error = std::max(max_error, std::abs(theory[e] - numeric[e]));
    if (std::isnan(theory[e]) || std::isnan(numeric[e])) {
      return absl::InternalError("the Jacobian has a NaN entry");
    }
    max_numeric = std::max(max_numeric, std::abs(numeric[e]));
  }
  if (max_numeric == 0) return absl::InternalError("the numeric Jacobian is zero everywhere");
  return max_error;
}

}  // namespace rill::testing
