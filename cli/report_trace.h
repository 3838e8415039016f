// A Chrome trace (the Trace Event Format JSON that chrome://tracing and
// Perfetto open) read as a stream and reduced to what the report's timeline draws.
#ifndef RILL_CLI_REPORT_TRACE_H_
#define RILL_CLI_REPORT_TRACE_H_

#include <cstddef>
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

// What a trace may hold of each kind, so that a trace of any size is read
// in bounded memory and drawn on a page of bounded size. Past a limit the
// rest is counted, and the page says what it left out.
struct TraceLimits {
  size_t max_depth = 64;          // JSON nesting; a deeper file is refused.
  size_t max_string_bytes = 256;  // Kept of a name, category or argument.
  size_t max_slices = 4000;       // The longest are kept.
  size_t max_flows = 2000;        // The first joined are kept.
  // Per (process, thread) and per process: names and sort indexes.
  size_t max_tracks = 2000;
  size_t max_open_slices = 10000;    // "B" events awaiting their "E", in all.
  size_t max_pending_flows = 20000;  // "s"/"f" events awaiting their other end.
  size_t max_counters = 16;          // (pid, name) pairs.
  size_t max_counter_series = 8;     // Arguments of one counter.
  size_t max_counter_points = 500;   // Per series, thinned evenly past it.
  size_t max_op_names = 10000;       // Names summed in op_totals.
};

// The time of all slices of one name, the kept and the left out.
struct TraceOpTotal {
  std::string name;
  int64_t count = 0;
  double total_dur = 0;  // Microseconds.
  double max_dur = 0;
};

struct Trace {
  // From the "M" events process_name / thread_name / *_sort_index.
  std::map<TraceId, std::string> process_names;
  std::map<std::pair<TraceId, TraceId>, std::string> thread_names;
  std::map<TraceId, double> process_sort_index;
  std::map<std::pair<TraceId, TraceId>, double> thread_sort_index;

  std::vector<TraceSlice> slices;  // In ts order; the longest max_slices of all.
  std::vector<TraceFlow> flows;
  std::vector<TraceCounter> counters;  // By (pid, name).
  // Events of a drawn phase that lack what drawing them needs (a ts, a
  // numeric dur), and "s"/"f" events without their other end.
  int64_t skipped_events = 0;

  // What the limits left out.
  int64_t events = 0;             // Events read, of every phase.
  int64_t total_slices = 0;       // Slices found; slices holds the longest of them.
  int64_t omitted_flows = 0;      // Joined flows past max_flows.
  int64_t thinned_points = 0;     // Counter samples dropped to thin a series.
  int64_t omitted_counters = 0;   // Samples of counters or series past the limits.
  int64_t omitted_metadata = 0;   // Names and sort indexes past max_tracks.
  int64_t overflowed_events = 0;  // "B", "s", "f" events with no room left to wait.
  // Per slice name, costliest first; names past max_op_names are summed
  // under "(other names)".
  std::vector<TraceOpTotal> op_totals;
};

// Reads the trace at `path` as a stream: an object {"traceEvents": [...],
// ...} or a bare array of events. Unknown phases and fields are ignored.
// INVALID_ARGUMENT naming `path` when it is not JSON or holds no event
// list; RESOURCE_EXHAUSTED naming `path` and the depth when it nests deeper
// than limits.max_depth.
absl::StatusOr<Trace> ReadChromeTrace(const std::string& path, const TraceLimits& limits = {});

// The same on a trace in memory; `path` names it in errors.
absl::StatusOr<Trace> ParseChromeTrace(const std::string& json, const std::string& path,
                                       const TraceLimits& limits = {});

}  // namespace rill::cli

#endif  // RILL_CLI_REPORT_TRACE_H_
