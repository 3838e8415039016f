// TensorFlow 1.x's standard session hooks (basic_session_run_hooks.py):
// stop at a step, save checkpoints and summaries, count steps per second,
// log tensors, stop on a NaN loss. The two saver hooks have headers of
// their own, included here.
//
// Each hook is made by a factory that checks its options (INVALID_ARGUMENT
// naming the hook and the option), and reads the global step through the
// session it is given. A graph without the global step tensor fails in
// AfterCreateSession with TensorFlow's FAILED_PRECONDITION "Global step
// should be created to use <hook>.". Time comes from an injectable clock.
#ifndef RILL_RUNTIME_TRAINING_BASIC_SESSION_RUN_HOOKS_H_
#define RILL_RUNTIME_TRAINING_BASIC_SESSION_RUN_HOOKS_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/log_sink.h"
#include "graph/tensor.h"
#include "runtime/session.h"
#include "runtime/training/checkpoint_saver_hook.h"  // IWYU pragma: export
#include "runtime/training/global_step.h"            // IWYU pragma: export
#include "runtime/training/second_or_step_timer.h"   // IWYU pragma: export
#include "runtime/training/session_run_hook.h"       // IWYU pragma: export
#include "runtime/training/summary_saver_hook.h"     // IWYU pragma: export
#include "runtime/training/summary_writer.h"

namespace rill {

// Every field has an initializer, so that options can be written as
// designated initializers ({.save_steps = 100}) without GCC warning about
// the fields left out.
struct StopAtStepHookOptions {
  // Exactly one of the two: how many steps to run past the global step
  // found when the first session is created, or the step to stop at.
  std::optional<int64_t> num_steps = std::nullopt;
  std::optional<int64_t> last_step = std::nullopt;
  std::string global_step_tensor = kGlobalStepTensorName;
};

// Requests a stop once the global step reaches last_step. Each step
// fetches the global step as it was before the step; only when that + 1
// reaches last_step is the step read again, so that a step that did not
// advance it (or advanced it by more) is judged by the real value.
// Thread safety: none of its own; called as SessionRunHook is.
class StopAtStepHook final : public SessionRunHook {
 public:
  // INVALID_ARGUMENT for neither or both of num_steps and last_step, or a
  // negative num_steps.
  static absl::StatusOr<std::unique_ptr<StopAtStepHook>> Create(StopAtStepHookOptions options);

  // With num_steps, fixes last_step from the current global step (on the
  // first session only: a recovered session keeps the goal).
  absl::Status AfterCreateSession(Session& session) override;
  std::vector<std::string> BeforeRun(SessionRunContext& context) override;
  absl::Status AfterRun(SessionRunContext& context, const std::vector<Tensor>& values) override;

  // nullopt until AfterCreateSession when num_steps was given.
  std::optional<int64_t> last_step() const { return last_step_; }

 private:
  explicit StopAtStepHook(StopAtStepHookOptions options);

  const StopAtStepHookOptions options_;
  std::optional<int64_t> last_step_;
};

struct StepCounterHookOptions {
  // At most one of the two; neither means every 100 steps (TensorFlow's
  // default).
  std::optional<int64_t> every_n_steps = std::nullopt;
  std::optional<double> every_n_secs = std::nullopt;
  // Optional; must outlive the hook.
  SummaryWriter* summary_writer = nullptr;
  std::string global_step_tensor = kGlobalStepTensorName;
  // Where "global_step/sec: 123.4" lines go; null: stderr (LogSink::Discard()
  // for none).
  LogSink* log = nullptr;
  HookClock clock = nullptr;  // Empty: absl::Now.
};

// Measures global steps per second between two firings of its timer and
// writes them as the scalar "<global step op name>/sec" (and logs them).
// Warns (on `log`, the first 5 times) when the global step did not advance
// between two steps: it then is not counting steps.
// Thread safety: none of its own; called as SessionRunHook is.
class StepCounterHook final : public SessionRunHook {
 public:
  // INVALID_ARGUMENT for both every_n_steps and every_n_secs, one that is
  // not positive, or a global_step_tensor that is no tensor name.
  static absl::StatusOr<std::unique_ptr<StepCounterHook>> Create(StepCounterHookOptions options);

  // Checks that the global step can be read.
  absl::Status AfterCreateSession(Session& session) override;
  std::vector<std::string> BeforeRun(SessionRunContext& context) override;
  absl::Status AfterRun(SessionRunContext& context, const std::vector<Tensor>& values) override;

  // "global_step/sec" for the tensor "global_step:0".
  const std::string& summary_tag() const { return summary_tag_; }

 private:
  StepCounterHook(StepCounterHookOptions options, std::string summary_tag, SecondOrStepTimer timer);

  const StepCounterHookOptions options_;
  const std::string summary_tag_;
  SecondOrStepTimer timer_;
  std::optional<int64_t> last_global_step_;  // Fetched by the previous step.
  int warnings_left_ = 5;
};

struct LoggingTensorHookOptions {
  // Tensor names, logged in this order.
  std::vector<std::string> tensors = {};
  // At most one of the two, counted in runs of the session (not global
  // steps); required unless at_end.
  std::optional<int64_t> every_n_iter = std::nullopt;
  std::optional<double> every_n_secs = std::nullopt;
  // Also log the tensors once more in End.
  bool at_end = false;
  LogSink* log = nullptr;     // Where the lines go; null: stderr.
  HookClock clock = nullptr;  // Empty: absl::Now.
};

// Prints "name = value, name = value" lines ("... (0.512 sec)" with the
// time since the previous line): the values of the first run, then every
// every_n_iter runs or every_n_secs. A value prints as FormatTensorValue.
// Thread safety: none of its own; called as SessionRunHook is.
class LoggingTensorHook final : public SessionRunHook {
 public:
  // INVALID_ARGUMENT for no tensors, no output, every_n_iter and
  // every_n_secs both given, neither without at_end, or one not positive.
  static absl::StatusOr<std::unique_ptr<LoggingTensorHook>> Create(
      LoggingTensorHookOptions options);

  absl::Status Begin() override;
  std::vector<std::string> BeforeRun(SessionRunContext& context) override;
  absl::Status AfterRun(SessionRunContext& context, const std::vector<Tensor>& values) override;
  absl::Status End(Session& session) override;

 private:
  LoggingTensorHook(LoggingTensorHookOptions options, std::optional<SecondOrStepTimer> timer);
  void Log(const std::vector<Tensor>& values);

  const LoggingTensorHookOptions options_;
  // nullopt when logging only at the end.
  std::optional<SecondOrStepTimer> timer_;
  int64_t iteration_ = 0;
  bool should_trigger_ = false;  // This run fetches the tensors.
};

// A tensor's value as the hooks print it: a scalar as its value (0.25, 7,
// "abc" in quotes), anything else as [v v v], cut with "..." after
// `max_entries` values.
std::string FormatTensorValue(const Tensor& value, int64_t max_entries = 20);

// Checks a loss after every step. A NaN loss fails the step's AfterRun with
// INVALID_ARGUMENT "NaN loss during training." or, without
// fail_on_nan_loss, requests a stop (and says so on `log`).
// Thread safety: none of its own; called as SessionRunHook is.
class NanTensorHook final : public SessionRunHook {
 public:
  // `loss_tensor`: float or double (a NaN in any element counts).
  // `log`: null for stderr.
  explicit NanTensorHook(std::string loss_tensor, bool fail_on_nan_loss = true,
                         LogSink* log = nullptr)
      : loss_tensor_(std::move(loss_tensor)),
        fail_on_nan_loss_(fail_on_nan_loss),
        log_(OrDefault(log)) {}

  std::vector<std::string> BeforeRun(SessionRunContext& context) override;
  absl::Status AfterRun(SessionRunContext& context, const std::vector<Tensor>& values) override;

 private:
  const std::string loss_tensor_;
  const bool fail_on_nan_loss_;
  LogSink* const log_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_BASIC_SESSION_RUN_HOOKS_H_
