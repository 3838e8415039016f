// A Chrome trace (the Trace Event Format JSON that chrome://tracing and
// Perfetto open) reduced to what the report's timeline draws.
#ifndef RILL_CLI_REPORT_TRACE_H_
#define RILL_CLI_REPORT_TRACE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace rill::cli {

// A process or thread id as the file gives it: a number (printed as an
// integer) or a string.
using TraceId = std::string;

// Orders ids as numbers when both are numbers, else as text, so that
// thread 10 comes after thread 9.
bool TraceIdLess(const TraceId& a, const TraceId& b);

// A complete event ("X"), or a "B"/"E" pair joined into one.
struct TraceSlice {
  TraceId pid, tid;
  double ts = 0;   // Microseconds, as in the file.
  double dur = 0;  // Microseconds.
  std::string name, cat;
  std::string args;  // "key: value, ..." for a tooltip, shortened.
};

// A flow: the "s" event joined to the "f" event with its id and category
// (a tensor's send and its receive).
struct TraceFlow {
  std::string id, name;
  TraceId from_pid, from_tid, to_pid, to_tid;
  double from_ts = 0, to_ts = 0;
};

// The "C" events of one name in one process: a value per argument over
// time (memory in use per device).
struct TraceCounter {
  TraceId pid;
  std::string name;
  std::map<std::string, std::vector<std::pair<double, double>>> series;  // In ts order.
};

struct Trace {
  // From the "M" events process_name / thread_name / *_sort_index.
  std::map<TraceId, std::string> process_names;
  std::map<std::pair<TraceId, TraceId>, std::string> thread_names;
  std::map<TraceId, double> process_sort_index;
  std::map<std::pair<TraceId, TraceId>, double> thread_sort_index;

  std::vector<TraceSlice> slices;  // In ts order.
  std::vector<TraceFlow> flows;
  std::vector<TraceCounter> counters;  // By (pid, name).
  // Events of a drawn phase that lack what drawing them needs (a ts, a
  // numeric dur), and "s"/"f" events without their other end.
  int64_t skipped_events = 0;
};

// Parses `json`: an object {"traceEvents": [...], ...} or a bare array of
// events. Unknown phases and fields are ignored. INVALID_ARGUMENT naming
// `path` when it is not JSON or holds no event list.
absl::StatusOr<Trace> ParseChromeTrace(const std::string& json, const std::string& path);

}  // namespace rill::cli

#endif  // RILL_CLI_REPORT_TRACE_H_
