#include "cli/report_data.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "fmt/core.h"
#include "graph/progress_line.h"
#include "graph/proto/event.pb.h"
#include "graph/proto/tensor.pb.h"
#include "graph/status_macros.h"
#include "io/posix_file.h"
#include "io/record_reader.h"
#include "runtime/training/checkpoint_state.h"

namespace rill::cli {
namespace {

namespace fs = std::filesystem;

struct FoundFiles {
  std::vector<std::string> event_files;
  std::vector<std::string> state_dirs;  // Directories with a `checkpoint` file.
  std::vector<std::string> traces;
  bool empty() const { return event_files.empty() && state_dirs.empty() && traces.empty(); }
};

absl::StatusOr<FoundFiles> FindFiles(const std::string& root, std::vector<std::string>& warnings) {
  std::error_code error;
  if (!fs::is_directory(root, error)) {
    return absl::NotFoundError(fs::exists(root, error)
                                   ? fmt::format("'{}' is not a directory", root)
                                   : fmt::format("'{}' does not exist", root));
  }
  FoundFiles found;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, error);
  for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    std::error_code type_error;  // A file that vanished while listing is just not read.
    if (!it->is_regular_file(type_error)) continue;
    const std::string name = it->path().filename().string();
    if (name.find("tfevents") != std::string::npos) {
      found.event_files.push_back(it->path().string());
    } else if (name == kCheckpointStateFile) {
      found.state_dirs.push_back(it->path().parent_path().string());
    } else if (name.ends_with(".trace.json")) {
      found.traces.push_back(it->path().string());
    }
  }
  if (error) {
    if (found.empty()) {
      return absl::NotFoundError(fmt::format("cannot list '{}': {}", root, error.message()));
    }
    warnings.push_back(fmt::format("stopped listing '{}' early: {}", root, error.message()));
  }
  std::sort(found.event_files.begin(), found.event_files.end());
  std::sort(found.state_dirs.begin(), found.state_dirs.end());
  return found;
}

// The host part of "events.out.tfevents.<seconds>.<host><suffix>", or the
// whole name when it is not named so.
std::string HostPart(const std::string& name) {
  constexpr std::string_view kMark = "tfevents.";
  const size_t at = name.find(kMark);
  if (at == std::string::npos) return name;
  const size_t dot = name.find('.', at + kMark.size());
  if (dot == std::string::npos || dot + 1 == name.size()) return name;
  return name.substr(dot + 1);
}

std::string TaskName(const std::string& root, const std::string& path) {
  const fs::path dir = fs::path(path).parent_path().lexically_relative(root);
  if (!dir.empty() && dir != ".") return dir.generic_string();
  return HostPart(fs::path(path).filename().string());
}

// TensorFlow 2 writes scalars as rank-0 tensors rather than simple_value.
std::optional<double> ScalarOf(const Summary::Value& value) {
  if (value.value_case() == Summary::Value::kSimpleValue) return value.simple_value();
  if (value.value_case() != Summary::Value::kTensor) return std::nullopt;
  const TensorProto& tensor = value.tensor();
  if (tensor.tensor_shape().dim_size() != 0) return std::nullopt;
  if (tensor.dtype() == DT_FLOAT) {
    if (tensor.float_val_size() == 1) return tensor.float_val(0);
    if (tensor.tensor_content().size() == sizeof(float)) {
      float f;
      std::memcpy(&f, tensor.tensor_content().data(), sizeof(f));
      return f;
    }
  } else if (tensor.dtype() == DT_DOUBLE) {
    if (tensor.double_val_size() == 1) return tensor.double_val(0);
    if (tensor.tensor_content().size() == sizeof(double)) {
      double d;
      std::memcpy(&d, tensor.tensor_content().data(), sizeof(d));
      return d;
    }
  }
  return std::nullopt;
}

// Sorts by step (a repeated step keeps its file order) and keeps the latest `keep`.
void KeepLatestHistograms(std::vector<HistogramPoint>& points, size_t keep) {
  std::stable_sort(
      points.begin(), points.end(),
      [](const HistogramPoint& a, const HistogramPoint& b) { return a.step < b.step; });
  if (points.size() > keep) points.erase(points.begin(), points.end() - keep);
}

// A SessionLog START at step S means the task restarted from a checkpoint
// older than what it logged before: TensorBoard drops the events at steps
// >= S read so far, as they belong to the lost run, and so does the report.
void PurgeFromStep(EventFile& file, int64_t step) {
  for (auto& [tag, points] : file.scalars) {
    std::erase_if(points, [step](const ScalarPoint& p) { return p.step >= step; });
  }
  for (auto& [tag, points] : file.histograms) {
    std::erase_if(points, [step](const HistogramPoint& p) { return p.step >= step; });
  }
}

// Of one scalar series: which of its points are kept.
struct Thinning {
  int64_t seen = 0;
  int64_t stride = 1;
};

void AddScalar(const std::string& tag, ScalarPoint point, EventFile& file, Thinning& thinning) {
  if (thinning.seen++ % thinning.stride != 0) {
    ++file.thinned_points;
    return;
  }
  std::vector<ScalarPoint>& points = file.scalars[tag];
  points.push_back(point);
  if (points.size() <= 2 * kKeptScalarPoints) return;
  std::stable_sort(points.begin(), points.end(),
                   [](const ScalarPoint& a, const ScalarPoint& b) { return a.step < b.step; });
  size_t kept = 0;
  for (size_t i = 0; i < points.size(); i += 2) points[kept++] = points[i];
  file.thinned_points += static_cast<int64_t>(points.size() - kept);
  points.resize(kept);
  thinning.stride *= 2;
}

void AddEvent(const Event& event, EventFile& file, std::vector<CheckpointRecord>& checkpoints,
              std::map<std::string, Thinning>& thinning) {
  if (event.has_summary()) {
    for (const Summary::Value& value : event.summary().value()) {
      if (const std::optional<double> scalar = ScalarOf(value)) {
        AddScalar(value.tag(), {event.step(), event.wall_time(), *scalar}, file,
                  thinning[value.tag()]);
      } else if (value.has_histo()) {
        auto& points = file.histograms[value.tag()];
        points.push_back({event.step(), event.wall_time(), value.histo()});
        if (points.size() > 4 * kKeptHistogramSteps)
          KeepLatestHistograms(points, kKeptHistogramSteps);
      }
    }
  } else if (event.has_session_log()) {
    const SessionLog& log = event.session_log();
    if (log.status() == SessionLog::CHECKPOINT) {
      checkpoints.push_back({event.step(), log.checkpoint_path(), {"events of " + file.task}});
    } else if (log.status() == SessionLog::START) {
      PurgeFromStep(file, event.step());
    }
  }
}

// Reads `file.path` to its end or its first bad record. An error when not
// one event could be read; a bad record after good ones is a warning.
absl::Status ReadEventFile(EventFile& file, std::vector<CheckpointRecord>& checkpoints,
                           std::vector<std::string>& warnings) {
  ASSIGN_OR_RETURN(const std::unique_ptr<RecordReader> reader, RecordReader::Open(file.path));
  int64_t unparsable = 0;
  uint64_t first_unparsable_offset = 0;
  std::map<std::string, Thinning> thinning;  // By tag.
  while (true) {
    const uint64_t offset = reader->offset();
    absl::StatusOr<std::string> record = reader->ReadRecord();
    if (absl::IsOutOfRange(record.status())) break;
    if (!record.ok()) {
      if (file.events == 0) return record.status();
      warnings.push_back(fmt::format("skipped the rest of {} (kept the {} events before it)",
                                     std::string(record.status().message()), file.events));
      break;
    }
    Event event;
    if (!event.ParseFromString(*record)) {
      if (unparsable++ == 0) first_unparsable_offset = offset;
      continue;
    }
    ++file.events;
    AddEvent(event, file, checkpoints, thinning);
  }
  if (unparsable > 0) {
    const std::string what =
        fmt::format("{}: {} record(s) that are not Events, the first at offset {}", file.path,
                    unparsable, first_unparsable_offset);
    if (file.events == 0) return absl::DataLossError(what);
    warnings.push_back("skipped " + what);
  }
  for (auto& [tag, points] : file.scalars) {
    std::stable_sort(points.begin(), points.end(),
                     [](const ScalarPoint& a, const ScalarPoint& b) { return a.step < b.step; });
  }
  for (auto& [tag, points] : file.histograms) KeepLatestHistograms(points, kKeptHistogramSteps);
  std::erase_if(file.scalars, [](const auto& entry) { return entry.second.empty(); });
  std::erase_if(file.histograms, [](const auto& entry) { return entry.second.empty(); });
  return absl::OkStatus();
}

// "model.ckpt-1000" -> 1000.
std::optional<int64_t> StepOfPath(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  const size_t dash = name.rfind('-');
  int64_t step = 0;
  if (dash == std::string::npos || !absl::SimpleAtoi(name.substr(dash + 1), &step)) {
    return std::nullopt;
  }
  return step;
}

void ReadCheckpointStates(const std::string& root, const std::vector<std::string>& dirs,
                          std::vector<CheckpointRecord>& checkpoints,
                          std::vector<std::string>& failures) {
  for (const std::string& dir : dirs) {
    const absl::StatusOr<std::optional<CheckpointState>> state = GetCheckpointState(dir);
    if (!state.ok()) {
      failures.push_back(std::string(state.status().message()));
      continue;
    }
    if (!state->has_value()) continue;
    const std::string relative = fs::path(dir).lexically_relative(root).generic_string();
    const std::string source =
        relative == "." ? "checkpoint state" : "checkpoint state in " + relative;
    for (const std::string& path : CheckpointsNewestFirst(**state)) {
      checkpoints.push_back({StepOfPath(path), path, {source}});
    }
  }
}

// One record per checkpoint: a state file and an event usually both name
// it, with paths relative to different directories, so records are matched
// by step and file name. Paths are shown relative to the log directory.
// A checkpoint's file name with its step: TensorFlow's saver hook logs the
// saver's base path ("model.ckpt") and the step beside it, where the
// checkpoint state names "model.ckpt-<step>".
std::string StepQualifiedName(const CheckpointRecord& record) {
  std::string name = fs::path(record.path).filename().string();
  if (!record.step) return name;
  const std::string suffix = absl::StrCat("-", *record.step);
  return name.ends_with(suffix) ? name : name + suffix;
}

std::vector<CheckpointRecord> MergeCheckpoints(const std::string& root,
                                               std::vector<CheckpointRecord> records) {
  std::vector<CheckpointRecord> merged;
  for (CheckpointRecord& record : records) {
    if (record.path.starts_with(root + "/")) record.path.erase(0, root.size() + 1);
    if (!record.step) record.step = StepOfPath(record.path);
    const std::string name = StepQualifiedName(record);
    const auto same = std::find_if(merged.begin(), merged.end(), [&](const CheckpointRecord& m) {
      return m.step == record.step && StepQualifiedName(m) == name;
    });
    if (same == merged.end()) {
      merged.push_back(std::move(record));
      continue;
    }
    // The name with the step is the file's own.
    if (same->path.empty() || (fs::path(same->path).filename().string() != name &&
                               fs::path(record.path).filename().string() == name)) {
      same->path = record.path;
    }
    for (std::string& source : record.sources) {
      if (std::find(same->sources.begin(), same->sources.end(), source) == same->sources.end()) {
        same->sources.push_back(std::move(source));
      }
    }
  }
  std::stable_sort(merged.begin(), merged.end(),
                   [](const CheckpointRecord& a, const CheckpointRecord& b) {
                     return std::make_tuple(!a.step, a.step.value_or(0), a.path) <
                            std::make_tuple(!b.step, b.step.value_or(0), b.path);
                   });
  return merged;
}

// The newest trace (by modification time) that parses; older ones are
// tried only when a newer one is bad.
void ReadNewestTrace(std::vector<std::string> traces, ReportData& data,
                     std::vector<std::string>& failures) {
  std::vector<std::pair<fs::file_time_type, std::string>> by_time;
  for (std::string& path : traces) {
    std::error_code error;
    by_time.emplace_back(fs::last_write_time(path, error), std::move(path));
  }
  std::sort(by_time.rbegin(), by_time.rend());
  data.trace_files = by_time.size();
  for (const auto& [time, path] : by_time) {
    // Read as a stream: a trace may be far larger than what the page draws of it.
    absl::StatusOr<Trace> trace = ReadChromeTrace(path);
    if (!trace.ok()) {
      failures.push_back("trace " + std::string(trace.status().message()));
      continue;
    }
    data.trace = *std::move(trace);
    data.trace_path = path;
    return;
  }
}

void NameTasksUniquely(std::vector<EventFile>& files) {
  std::map<std::string, int> seen;
  for (EventFile& file : files) {
    const int n = ++seen[file.task];
    if (n > 1) file.task += fmt::format(" #{}", n);
  }
}

}  // namespace

absl::StatusOr<ReportData> ReadLogdir(const std::string& logdir, bool progress) {
  ReportData data;
  std::string root = fs::path(logdir).lexically_normal().string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  data.logdir = root;
  ASSIGN_OR_RETURN(const FoundFiles found, FindFiles(root, data.warnings));
  if (found.empty()) {
    return absl::NotFoundError(fmt::format(
        "'{}' holds no event files (*tfevents*), checkpoint state or trace (*.trace.json)", root));
  }

  // Files that could not be read at all: warnings when something else
  // could, the error when nothing could.
  std::vector<std::string> failures;
  std::vector<CheckpointRecord> checkpoints;
  std::vector<EventFile> files(found.event_files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    files[i].path = found.event_files[i];
    files[i].task = TaskName(root, files[i].path);
  }
  NameTasksUniquely(files);
  ProgressLine line("report", static_cast<int64_t>(files.size()),
                    {.unit = "event files", .enabled = progress});
  for (size_t i = 0; i < files.size(); ++i) {
    EventFile& file = files[i];
    absl::Status status = ReadEventFile(file, checkpoints, data.warnings);
    line.Update(static_cast<int64_t>(i + 1));
    if (!status.ok()) {
      failures.push_back(std::string(status.message()));
      continue;
    }
    data.event_files.push_back(std::move(file));
  }
  line.Finish();
  std::stable_sort(data.event_files.begin(), data.event_files.end(),
                   [](const EventFile& a, const EventFile& b) { return a.task < b.task; });
  ReadCheckpointStates(root, found.state_dirs, checkpoints, failures);
  data.checkpoints = MergeCheckpoints(root, std::move(checkpoints));
  ReadNewestTrace(found.traces, data, failures);

  const bool has_events = std::any_of(data.event_files.begin(), data.event_files.end(),
                                      [](const EventFile& f) { return f.events > 0; });
  if (!has_events && data.checkpoints.empty() && !data.trace) {
    if (failures.size() == 1) return absl::DataLossError(failures.front());
    if (!failures.empty()) {
      return absl::DataLossError(fmt::format("none of the {} files under '{}' could be read: {}",
                                             failures.size(), root, failures.front()));
    }
    return absl::NotFoundError(fmt::format("'{}': its event files hold no events", root));
  }
  for (const std::string& failure : failures) data.warnings.push_back("skipped " + failure);
  return data;
}

}  // namespace rill::cli
