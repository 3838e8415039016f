#include "runtime/training/basic_session_run_hooks.h"

#include <cmath>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "graph/tensor_id.h"
#include "graph/types.h"

namespace rill {

absl::StatusOr<std::unique_ptr<StopAtStepHook>> StopAtStepHook::Create(
    StopAtStepHookOptions options) {
  if (options.num_steps.has_value() == options.last_step.has_value()) {
    return absl::InvalidArgumentError(options.num_steps.has_value()
                                          ? "StopAtStepHook: give num_steps or last_step, not both"
                                          : "StopAtStepHook: give num_steps or last_step");
  }
  if (options.num_steps.has_value() && *options.num_steps < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "StopAtStepHook: num_steps must not be negative, got %d", *options.num_steps));
  }
  return absl::WrapUnique(new StopAtStepHook(std::move(options)));
}

StopAtStepHook::StopAtStepHook(StopAtStepHookOptions options)
    : options_(std::move(options)), last_step_(options_.last_step) {}

absl::Status StopAtStepHook::AfterCreateSession(Session& session) {
  // Always read, so that a graph without a global step fails here.
  ASSIGN_OR_RETURN(const int64_t step,
                   ReadGlobalStep(session, options_.global_step_tensor, "StopAtStepHook"));
  if (!last_step_.has_value()) last_step_ = step + *options_.num_steps;
  return absl::OkStatus();
}

std::vector<std::string> StopAtStepHook::BeforeRun(SessionRunContext& context) {
  (void)context;
  return {options_.global_step_tensor};
}

absl::Status StopAtStepHook::AfterRun(SessionRunContext& context,
                                      const std::vector<Tensor>& values) {
  if (!last_step_.has_value()) {
    return absl::FailedPreconditionError("StopAtStepHook: AfterRun before AfterCreateSession");
  }
  ASSIGN_OR_RETURN(const int64_t stale,
                   FetchedGlobalStep(values, options_.global_step_tensor, "StopAtStepHook"));
  if (stale + 1 < *last_step_) return absl::OkStatus();
  ASSIGN_OR_RETURN(
      const int64_t step,
      ReadGlobalStep(*context.session(), options_.global_step_tensor, "StopAtStepHook"));
  if (step >= *last_step_) context.RequestStop();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<StepCounterHook>> StepCounterHook::Create(
    StepCounterHookOptions options) {
  std::optional<int64_t> every_n_steps = options.every_n_steps;
  if (!every_n_steps.has_value() && !options.every_n_secs.has_value()) every_n_steps = 100;
  // TensorFlow's tag is the global step variable's op name + "/sec".
  absl::StatusOr<TensorId> id = ParseTensorName(options.global_step_tensor);
  if (!id.ok() || id->IsControl()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("StepCounterHook: global_step_tensor \"%s\" is not a tensor name",
                        options.global_step_tensor));
  }
  ASSIGN_OR_RETURN(
      SecondOrStepTimer timer,
      SecondOrStepTimer::CreateFor({"StepCounterHook", "every_n_secs", "every_n_steps"},
                                   options.every_n_secs, every_n_steps, options.clock));
  std::string tag = id->node + "/sec";
  return absl::WrapUnique(
      new StepCounterHook(std::move(options), std::move(tag), std::move(timer)));
}

StepCounterHook::StepCounterHook(StepCounterHookOptions options, std::string summary_tag,
                                 SecondOrStepTimer timer)
    : options_(std::move(options)),
      summary_tag_(std::move(summary_tag)),
      timer_(std::move(timer)) {}

absl::Status StepCounterHook::AfterCreateSession(Session& session) {
  return ReadGlobalStep(session, options_.global_step_tensor, "StepCounterHook").status();
}

std::vector<std::string> StepCounterHook::BeforeRun(SessionRunContext& context) {
  (void)context;
  return {options_.global_step_tensor};
}

absl::Status StepCounterHook::AfterRun(SessionRunContext& context,
                                       const std::vector<Tensor>& values) {
  ASSIGN_OR_RETURN(const int64_t stale,
                   FetchedGlobalStep(values, options_.global_step_tensor, "StepCounterHook"));
  if (timer_.ShouldTriggerForStep(stale + 1)) {
    ASSIGN_OR_RETURN(
        const int64_t step,
        ReadGlobalStep(*context.session(), options_.global_step_tensor, "StepCounterHook"));
    if (timer_.ShouldTriggerForStep(step)) {
      const std::optional<SecondOrStepTimer::Elapsed> elapsed =
          timer_.UpdateLastTriggeredStep(step);
      // No rate for the first trigger, nor for no time at all.
      if (elapsed.has_value() && elapsed->time > absl::ZeroDuration()) {
        const double steps_per_sec =
            static_cast<double>(elapsed->steps) / absl::ToDoubleSeconds(elapsed->time);
        if (options_.summary_writer != nullptr) {
          RETURN_IF_ERROR(options_.summary_writer->AddScalar(
              summary_tag_, static_cast<float>(steps_per_sec), step));
        }
        OrDefault(options_.log)->Log("%s: %g", summary_tag_.c_str(), steps_per_sec);
      }
    }
  }
  // Some optimizers (SyncReplicas on a worker) do not advance the global
  // step every step by design, hence only a few warnings.
  if (last_global_step_ == stale && warnings_left_ > 0) {
    --warnings_left_;
    OrDefault(options_.log)
        ->Log(
            "StepCounterHook: the global step %s has not increased (still %lld); "
            "pass it to Optimizer::Minimize or ApplyGradients to count steps",
            options_.global_step_tensor.c_str(), static_cast<long long>(stale));
  }
  last_global_step_ = stale;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<LoggingTensorHook>> LoggingTensorHook::Create(
    LoggingTensorHookOptions options) {
  if (options.tensors.empty()) {
    return absl::InvalidArgumentError("LoggingTensorHook: no tensors");
  }
  std::optional<SecondOrStepTimer> timer;
  // Only at the end: no periodic logging at all.
  const bool only_at_end =
      options.at_end && !options.every_n_iter.has_value() && !options.every_n_secs.has_value();
  if (!only_at_end) {
    ASSIGN_OR_RETURN(timer, SecondOrStepTimer::CreateFor(
                                {"LoggingTensorHook", "every_n_secs", "every_n_iter"},
                                options.every_n_secs, options.every_n_iter, options.clock));
  }
  return absl::WrapUnique(new LoggingTensorHook(std::move(options), std::move(timer)));
}

LoggingTensorHook::LoggingTensorHook(LoggingTensorHookOptions options,
                                     std::optional<SecondOrStepTimer> timer)
    : options_(std::move(options)), timer_(std::move(timer)) {}

absl::Status LoggingTensorHook::Begin() {
  if (timer_.has_value()) timer_->Reset();
  iteration_ = 0;
  return absl::OkStatus();
}

std::vector<std::string> LoggingTensorHook::BeforeRun(SessionRunContext& context) {
  (void)context;
  should_trigger_ = timer_.has_value() && timer_->ShouldTriggerForStep(iteration_);
  if (!should_trigger_) return {};
  return options_.tensors;
}

absl::Status LoggingTensorHook::AfterRun(SessionRunContext& context,
                                         const std::vector<Tensor>& values) {
  (void)context;
  if (should_trigger_) {
    if (values.size() != options_.tensors.size()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("LoggingTensorHook: AfterRun got %d values for %d tensors", values.size(),
                          options_.tensors.size()));
    }
    Log(values);
  }
  ++iteration_;
  return absl::OkStatus();
}

absl::Status LoggingTensorHook::End(Session& session) {
  if (!options_.at_end) return absl::OkStatus();
  ASSIGN_OR_RETURN(const std::vector<Tensor> values, session.Run({}, options_.tensors, {}));
  Log(values);
  return absl::OkStatus();
}

void LoggingTensorHook::Log(const std::vector<Tensor>& values) {
  std::optional<SecondOrStepTimer::Elapsed> elapsed;
  if (timer_.has_value()) elapsed = timer_->UpdateLastTriggeredStep(iteration_);
  std::vector<std::string> stats;
  for (size_t i = 0; i < values.size(); ++i) {
    stats.push_back(absl::StrFormat("%s = %s", options_.tensors[i], FormatTensorValue(values[i])));
  }
  std::string line = absl::StrJoin(stats, ", ");
  if (elapsed.has_value()) {
    absl::StrAppendFormat(&line, " (%.3f sec)", absl::ToDoubleSeconds(elapsed->time));
  }
  OrDefault(options_.log)->WriteLine(line);
}

std::string FormatTensorValue(const Tensor& value, int64_t max_entries) {
  if (value.IsInitialized() && value.dims() == 0) return value.SummarizeValue(1);
  return absl::StrFormat("[%s]", value.SummarizeValue(max_entries));
}

std::vector<std::string> NanTensorHook::BeforeRun(SessionRunContext& context) {
  (void)context;
  return {loss_tensor_};
}

absl::Status NanTensorHook::AfterRun(SessionRunContext& context,
                                     const std::vector<Tensor>& values) {
  if (values.size() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NanTensorHook: AfterRun got %d values for the loss %s", values.size(), loss_tensor_));
  }
  const Tensor& loss = values[0];
  bool nan = false;
  switch (loss.IsInitialized() ? BaseType(loss.dtype()) : DT_INVALID) {
    case DT_FLOAT:
      for (int64_t i = 0; i < loss.NumElements(); ++i) nan |= std::isnan(loss.data<float>()[i]);
      break;
    case DT_DOUBLE:
      for (int64_t i = 0; i < loss.NumElements(); ++i) nan |= std::isnan(loss.data<double>()[i]);
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("NanTensorHook: the loss %s must be float or double, got %s",
                          loss_tensor_, loss.DebugString()));
  }
  if (!nan) return absl::OkStatus();
  if (fail_on_nan_loss_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("NaN loss during training. (NanTensorHook: %s is NaN)", loss_tensor_));
  }
  log_->Log("NanTensorHook: model diverged with loss = NaN (%s); stopping", loss_tensor_.c_str());
  context.RequestStop();
  return absl::OkStatus();
}

}  // namespace rill
