// Reads what training left in a log directory (the event files of every
// task, checkpoint states, Chrome traces) into plain structs for `rill report`.
#ifndef RILL_CLI_REPORT_DATA_H_
#define RILL_CLI_REPORT_DATA_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/report_trace.h"
#include "graph/proto/summary.pb.h"

namespace rill::cli {

// How many steps of a histogram the report keeps (the latest ones): the
// small multiples draw no more, and a long run logs one per step.
inline constexpr size_t kKeptHistogramSteps = 5;
// How many points of a scalar series the report keeps while reading: past
// twice this the series is thinned evenly (every other point goes, and
// from then on every other one is not kept), since a plot draws no more.
inline constexpr size_t kKeptScalarPoints = 4000;

struct ScalarPoint {
  int64_t step = 0;
  double wall_time = 0;  // Seconds since the Unix epoch.
  double value = 0;
};

struct HistogramPoint {
  int64_t step = 0;
  double wall_time = 0;
  HistogramProto histogram;
};

// One event file: one series in every plot it has data for.
struct EventFile {
  std::string path;  // As found under the log directory.
  // Its directory relative to the log directory, or for a file directly
  // in it the host part of its name (events.out.tfevents.<time>.<host>);
  // made unique with " #2", " #3" in path order.
  std::string task;
  int64_t events = 0;
  int64_t thinned_points = 0;  // Scalar points not kept (kKeptScalarPoints).
  std::map<std::string, std::vector<ScalarPoint>> scalars;        // By tag, in step order.
  std::map<std::string, std::vector<HistogramPoint>> histograms;  // By tag, in step order.
};

// A checkpoint known from a `checkpoint` state file, a SessionLog
// CHECKPOINT event, or both.
struct CheckpointRecord {
  std::optional<int64_t> step;  // The event's step, else the path's "-STEP" suffix.
  std::string path;
  std::vector<std::string> sources;  // "checkpoint state", "events of worker0", ...
};

struct ReportData {
  std::string logdir;
  std::vector<EventFile> event_files;         // In task order.
  std::vector<CheckpointRecord> checkpoints;  // In step order; unknown steps last.
  // The newest trace that parsed, and of how many found.
  std::optional<Trace> trace;
  std::string trace_path;
  size_t trace_files = 0;
  // One line each, naming the file (and the byte offset where known) and
  // what was skipped of it.
  std::vector<std::string> warnings;
};

// Reads everything under `logdir`, recursively: files whose name contains
// "tfevents" as event files, files named "checkpoint" as checkpoint states,
// and the newest "*.trace.json" that parses. A bad file among good ones is
// skipped (or kept up to its first bad record) with a warning. NOT_FOUND
// when `logdir` is not a directory or holds none of these files;
// DATA_LOSS, naming the file, when none of them could be read. With
// `progress`, a progress line on stderr counts the event files read.
absl::StatusOr<ReportData> ReadLogdir(const std::string& logdir, bool progress = false);

}  // namespace rill::cli

#endif  // RILL_CLI_REPORT_DATA_H_
