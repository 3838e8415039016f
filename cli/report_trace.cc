#include "cli/report_trace.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "cli/json_pull_reader.h"
#include "fmt/core.h"
#include "io/env.h"

namespace rill::cli {
namespace {

// A tooltip longer than this is not read; huge args would only bloat the page.
constexpr size_t kMaxArgsText = 240;
// Arguments kept of one event; the rest are read and dropped.
constexpr size_t kMaxArgs = 32;
constexpr char kOtherNames[] = "(other names)";

// A field's value: a scalar's text (a number printed as chrome://tracing
// prints it), or a container as compact JSON, shortened.
struct Field {
  bool present = false;
  std::string text;
  std::optional<double> number;  // A finite number, or a string that is one.
};

std::string NumberText(const JsonPullReader& reader) {
  const double number = reader.number();
  if (!std::isfinite(number)) return reader.text();
  if (number == std::floor(number) && std::abs(number) < 1e15) {
    return fmt::format("{}", static_cast<int64_t>(number));
  }
  return fmt::format("{}", number);
}

void AppendQuoted(const std::string& text, std::string& out) {
  out += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

// Reads the value that starts with `first` (already read) into `field`,
// keeping at most `cap` bytes of its text.
absl::Status ReadField(JsonPullReader& reader, JsonToken first, size_t cap, Field& field) {
  field = Field();
  field.present = true;
  switch (first) {
    case JsonToken::kString: {
      field.text = reader.text();
      double parsed = 0;
      if (absl::SimpleAtod(field.text, &parsed) && std::isfinite(parsed)) field.number = parsed;
      return absl::OkStatus();
    }
    case JsonToken::kNumber:
      field.text = NumberText(reader);
      if (std::isfinite(reader.number())) field.number = reader.number();
      return absl::OkStatus();
    case JsonToken::kTrue:
      field.text = "true";
      return absl::OkStatus();
    case JsonToken::kFalse:
      field.text = "false";
      return absl::OkStatus();
    case JsonToken::kNull:
      field.text = "null";
      return absl::OkStatus();
    case JsonToken::kBeginObject:
    case JsonToken::kBeginArray:
      break;
    default:
      return absl::InvalidArgumentError(
          fmt::format("expected a value at byte {}", reader.offset()));
  }
  // A container: written out as compact JSON until `cap`, then only read.
  const size_t outside = reader.depth() - 1;
  std::string& out = field.text;
  bool comma = false;
  JsonToken token = first;
  while (true) {
    if (out.size() < cap) {
      const bool value = token != JsonToken::kEndObject && token != JsonToken::kEndArray;
      if (value && comma) out += ',';
      switch (token) {
        case JsonToken::kBeginObject:
          out += '{';
          break;
        case JsonToken::kBeginArray:
          out += '[';
          break;
        case JsonToken::kEndObject:
          out += '}';
          break;
        case JsonToken::kEndArray:
          out += ']';
          break;
        case JsonToken::kKey:
          AppendQuoted(reader.text(), out);
          out += ':';
          break;
        case JsonToken::kString:
          AppendQuoted(reader.text(), out);
          break;
        case JsonToken::kNumber:
          out += NumberText(reader);
          break;
        case JsonToken::kTrue:
          out += "true";
          break;
        case JsonToken::kFalse:
          out += "false";
          break;
        default:
          out += "null";
          break;
      }
      comma = token != JsonToken::kBeginObject && token != JsonToken::kBeginArray &&
              token != JsonToken::kKey;
      if (out.size() >= cap) out += "...";
    }
    if (reader.depth() == outside) return absl::OkStatus();
    absl::StatusOr<JsonToken> next = reader.Next();
    if (!next.ok()) return next.status();
    token = *next;
  }
}

// One event object, reduced to the fields the report reads.
struct Event {
  Field ph, name, cat, pid, tid, id, ts, dur;
  bool has_args = false;
  std::vector<std::pair<std::string, Field>> args;  // The first kMaxArgs, in file order.
};

// After the event's "{", to past its "}".
absl::Status ReadEvent(JsonPullReader& reader, size_t cap, Event& event) {
  while (true) {
    absl::StatusOr<JsonToken> token = reader.Next();
    if (!token.ok()) return token.status();
    if (*token == JsonToken::kEndObject) return absl::OkStatus();
    const std::string key = reader.text();
    absl::StatusOr<JsonToken> value = reader.Next();
    if (!value.ok()) return value.status();
    Field* field = key == "ph"     ? &event.ph
                   : key == "name" ? &event.name
                   : key == "cat"  ? &event.cat
                   : key == "pid"  ? &event.pid
                   : key == "tid"  ? &event.tid
                   : key == "id"   ? &event.id
                   : key == "ts"   ? &event.ts
                   : key == "dur"  ? &event.dur
                                   : nullptr;
    if (field != nullptr) {
      if (absl::Status bad = ReadField(reader, *value, cap, *field); !bad.ok()) return bad;
    } else if (key == "args" && *value == JsonToken::kBeginObject) {
      event.has_args = true;
      event.args.clear();
      while (true) {
        absl::StatusOr<JsonToken> arg = reader.Next();
        if (!arg.ok()) return arg.status();
        if (*arg == JsonToken::kEndObject) break;
        std::string arg_key = reader.text();
        absl::StatusOr<JsonToken> arg_value = reader.Next();
        if (!arg_value.ok()) return arg_value.status();
        if (event.args.size() < kMaxArgs) {
          Field parsed;
          if (absl::Status bad = ReadField(reader, *arg_value, cap, parsed); !bad.ok()) return bad;
          event.args.emplace_back(std::move(arg_key), std::move(parsed));
        } else if (absl::Status bad = reader.SkipContainer(); !bad.ok()) {
          return bad;
        }
      }
    } else if (absl::Status bad = reader.SkipContainer(); !bad.ok()) {
      return bad;
    }
  }
}

// A missing pid or tid is 0, as chrome://tracing takes it.
TraceId Id(const Field& field) { return field.present ? field.text : "0"; }

const Field* Arg(const Event& event, std::string_view key) {
  for (const auto& [name, value] : event.args) {
    if (name == key) return &value;
  }
  return nullptr;
}

std::string ArgsText(const Event& event) {
  // Sorted, so that the page does not depend on the file's key order.
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [key, value] : event.args) entries.emplace_back(key, value.text);
  std::sort(entries.begin(), entries.end());
  std::string text;
  for (const auto& [key, value] : entries) {
    if (!text.empty()) text += ", ";
    text += key + ": " + value;
    if (text.size() > kMaxArgsText) {
      text.resize(kMaxArgsText);
      text += "...";
      break;
    }
  }
  return text;
}

TraceSlice MakeSlice(const Event& event, const TraceId& pid, const TraceId& tid, double ts,
                     double dur) {
  TraceSlice slice;
  slice.pid = pid;
  slice.tid = tid;
  slice.ts = ts;
  slice.dur = dur;
  slice.name = event.name.text;
  slice.cat = event.cat.text;
  slice.args = ArgsText(event);
  return slice;
}

struct FlowEnd {
  TraceId pid, tid;
  double ts = 0;
  std::string name;
};

struct ThinnedSeries {
  std::vector<std::pair<double, double>> points;
  int64_t stride = 1, seen = 0;
};

// Turns events into a Trace within `limits`, one event at a time.
class TraceBuilder {
 public:
  explicit TraceBuilder(const TraceLimits& limits) : limits_(limits) {}

  void Add(const Event& event);
  Trace Finish() &&;
  void SkipNonObject() { ++trace_.skipped_events; }

 private:
  void ReadMetadata(const Event& event, const TraceId& pid, const TraceId& tid);
  void AddSlice(TraceSlice slice);
  void AddFlowEnd(bool start, const Event& event, const TraceId& pid, const TraceId& tid,
                  double ts);
  void AddCounter(const Event& event, const TraceId& pid, double ts);
  template <typename Map, typename Key, typename Value>
  void PutMetadata(Map& map, const Key& key, Value value) {
    if (map.size() >= limits_.max_tracks && !map.contains(key)) {
      ++trace_.omitted_metadata;
      return;
    }
    map[key] = std::move(value);
  }

  const TraceLimits limits_;
  Trace trace_;
  // The longest slices so far: a heap whose front is the shortest of them.
  std::vector<TraceSlice> slices_;
  std::map<std::string, TraceOpTotal> op_totals_;
  std::map<std::pair<TraceId, TraceId>, std::vector<TraceSlice>> open_slices_;  // "B" awaiting "E".
  size_t open_count_ = 0;
  std::map<std::string, FlowEnd> flow_starts_, flow_finishes_;  // By category and id.
  std::map<std::pair<TraceId, std::string>, std::map<std::string, ThinnedSeries>> counters_;
};

// The heap's order: a slice is "greater" when it is kept longer.
bool KeptLonger(const TraceSlice& a, const TraceSlice& b) {
  return std::tie(a.dur, b.ts) > std::tie(b.dur, a.ts);
}

void TraceBuilder::AddSlice(TraceSlice slice) {
  ++trace_.total_slices;
  auto it = op_totals_.find(slice.name);
  if (it == op_totals_.end()) {
    const std::string& key = op_totals_.size() < limits_.max_op_names ? slice.name : kOtherNames;
    it = op_totals_.try_emplace(key).first;
    it->second.name = key;
  }
  ++it->second.count;
  it->second.total_dur += slice.dur;
  it->second.max_dur = std::max(it->second.max_dur, slice.dur);

  if (slices_.size() < limits_.max_slices) {
    slices_.push_back(std::move(slice));
    std::push_heap(slices_.begin(), slices_.end(), KeptLonger);
  } else if (!slices_.empty() && KeptLonger(slice, slices_.front())) {
    std::pop_heap(slices_.begin(), slices_.end(), KeptLonger);
    slices_.back() = std::move(slice);
    std::push_heap(slices_.begin(), slices_.end(), KeptLonger);
  }
}

void TraceBuilder::ReadMetadata(const Event& event, const TraceId& pid, const TraceId& tid) {
  if (!event.has_args) return;
  const std::string& kind = event.name.text;
  if (kind == "process_name") {
    const Field* name = Arg(event, "name");
    PutMetadata(trace_.process_names, pid, name ? name->text : "");
  } else if (kind == "thread_name") {
    const Field* name = Arg(event, "name");
    PutMetadata(trace_.thread_names, std::make_pair(pid, tid), name ? name->text : "");
  } else if (kind == "process_sort_index" || kind == "thread_sort_index") {
    const Field* index = Arg(event, "sort_index");
    if (index == nullptr || !index->number) return;
    if (kind == "process_sort_index") {
      PutMetadata(trace_.process_sort_index, pid, *index->number);
    } else {
      PutMetadata(trace_.thread_sort_index, std::make_pair(pid, tid), *index->number);
    }
  }
}

void TraceBuilder::AddFlowEnd(bool start, const Event& event, const TraceId& pid,
                              const TraceId& tid, double ts) {
  const std::string key = event.cat.text + '\n' + event.id.text;
  auto& mine = start ? flow_starts_ : flow_finishes_;
  auto& other = start ? flow_finishes_ : flow_starts_;
  FlowEnd end{pid, tid, ts, event.name.text};
  const auto match = other.find(key);
  if (match == other.end()) {
    if (mine.size() >= limits_.max_pending_flows && !mine.contains(key)) {
      ++trace_.overflowed_events;
      return;
    }
    mine.emplace(key, std::move(end));  // A repeated end keeps the first.
    return;
  }
  const FlowEnd& from = start ? end : match->second;
  const FlowEnd& to = start ? match->second : end;
  if (trace_.flows.size() >= limits_.max_flows) {
    ++trace_.omitted_flows;
  } else {
    TraceFlow flow;
    flow.id = event.id.text;
    flow.name = from.name;
    flow.from_pid = from.pid;
    flow.from_tid = from.tid;
    flow.from_ts = from.ts;
    flow.to_pid = to.pid;
    flow.to_tid = to.tid;
    flow.to_ts = to.ts;
    trace_.flows.push_back(std::move(flow));
  }
  other.erase(match);
}

void TraceBuilder::AddCounter(const Event& event, const TraceId& pid, double ts) {
  const auto key = std::make_pair(pid, event.name.text);
  auto counter = counters_.find(key);
  if (counter == counters_.end()) {
    if (counters_.size() >= limits_.max_counters) {
      ++trace_.omitted_counters;
      return;
    }
    counter = counters_.try_emplace(key).first;
  }
  for (const auto& [arg, value] : event.args) {
    if (!value.number) continue;
    auto series = counter->second.find(arg);
    if (series == counter->second.end()) {
      if (counter->second.size() >= limits_.max_counter_series) {
        ++trace_.omitted_counters;
        continue;
      }
      series = counter->second.try_emplace(arg).first;
    }
    // Every stride-th sample; when the kept ones fill up, every other of
    // them goes and the stride doubles, so the series stays evenly thinned.
    ThinnedSeries& thinned = series->second;
    if (thinned.seen++ % thinned.stride != 0) {
      ++trace_.thinned_points;
      continue;
    }
    thinned.points.emplace_back(ts, *value.number);
    if (thinned.points.size() > std::max<size_t>(limits_.max_counter_points, 2)) {
      size_t kept = 0;
      for (size_t i = 0; i < thinned.points.size(); i += 2)
        thinned.points[kept++] = thinned.points[i];
      trace_.thinned_points += static_cast<int64_t>(thinned.points.size() - kept);
      thinned.points.resize(kept);
      thinned.stride *= 2;
    }
  }
}

void TraceBuilder::Add(const Event& event) {
  ++trace_.events;
  const std::string& phase = event.ph.text;
  const TraceId pid = Id(event.pid), tid = Id(event.tid);
  if (phase == "M") {
    ReadMetadata(event, pid, tid);
    return;
  }
  // Instant, async, object and sample events are not drawn.
  if (phase != "X" && phase != "B" && phase != "E" && phase != "s" && phase != "f" &&
      phase != "C") {
    return;
  }
  if (!event.ts.number) {
    ++trace_.skipped_events;
    return;
  }
  const double ts = *event.ts.number;
  if (phase == "X") {
    if (!event.dur.number || *event.dur.number < 0) {
      ++trace_.skipped_events;
      return;
    }
    AddSlice(MakeSlice(event, pid, tid, ts, *event.dur.number));
  } else if (phase == "B") {
    if (open_count_ >= limits_.max_open_slices) {
      ++trace_.overflowed_events;
      return;
    }
    ++open_count_;
    open_slices_[{pid, tid}].push_back(MakeSlice(event, pid, tid, ts, 0));
  } else if (phase == "E") {
    const auto stack = open_slices_.find({pid, tid});
    if (stack == open_slices_.end() || stack->second.empty()) {
      ++trace_.skipped_events;
      return;
    }
    TraceSlice slice = std::move(stack->second.back());
    stack->second.pop_back();
    if (stack->second.empty()) open_slices_.erase(stack);
    --open_count_;
    slice.dur = std::max(0.0, ts - slice.ts);
    AddSlice(std::move(slice));
  } else if (phase == "s" || phase == "f") {
    if (!event.id.present) {
      ++trace_.skipped_events;
      return;
    }
    AddFlowEnd(phase == "s", event, pid, tid, ts);
  } else {
    if (!event.has_args) {
      ++trace_.skipped_events;
      return;
    }
    AddCounter(event, pid, ts);
  }
}

Trace TraceBuilder::Finish() && {
  trace_.skipped_events +=
      static_cast<int64_t>(open_count_ + flow_starts_.size() + flow_finishes_.size());
  trace_.slices = std::move(slices_);
  // Parents before their children, so that nesting can be found in one pass.
  std::sort(trace_.slices.begin(), trace_.slices.end(),
            [](const TraceSlice& a, const TraceSlice& b) {
              return std::tie(a.ts, b.dur, a.pid, a.tid, a.name) <
                     std::tie(b.ts, a.dur, b.pid, b.tid, b.name);
            });
  for (auto& [key, series] : counters_) {
    TraceCounter counter;
    counter.pid = key.first;
    counter.name = key.second;
    for (auto& [arg, thinned] : series) {
      std::stable_sort(thinned.points.begin(), thinned.points.end());
      if (!thinned.points.empty()) counter.series[arg] = std::move(thinned.points);
    }
    if (!counter.series.empty()) trace_.counters.push_back(std::move(counter));
  }
  for (auto& [name, total] : op_totals_) trace_.op_totals.push_back(std::move(total));
  std::sort(trace_.op_totals.begin(), trace_.op_totals.end(),
            [](const TraceOpTotal& a, const TraceOpTotal& b) {
              return std::tie(b.total_dur, a.name) < std::tie(a.total_dur, b.name);
            });
  return std::move(trace_);
}

// Reads the event list the reader stands at (past its "[").
absl::Status ReadEvents(JsonPullReader& reader, size_t cap, TraceBuilder& builder) {
  while (true) {
    absl::StatusOr<JsonToken> token = reader.Next();
    if (!token.ok()) return token.status();
    if (*token == JsonToken::kEndArray) return absl::OkStatus();
    if (*token != JsonToken::kBeginObject) {
      builder.SkipNonObject();
      if (absl::Status bad = reader.SkipContainer(); !bad.ok()) return bad;
      continue;
    }
    Event event;
    if (absl::Status bad = ReadEvent(reader, cap, event); !bad.ok()) return bad;
    builder.Add(event);
  }
}

absl::StatusOr<Trace> ReadTrace(JsonPullReader& reader, const std::string& path,
                                const TraceLimits& limits) {
  TraceBuilder builder(limits);
  bool found = false;
  const auto read = [&]() -> absl::Status {
    absl::StatusOr<JsonToken> token = reader.Next();
    if (!token.ok()) return token.status();
    if (*token == JsonToken::kBeginArray) {
      found = true;
      if (absl::Status bad = ReadEvents(reader, limits.max_string_bytes, builder); !bad.ok()) {
        return bad;
      }
    } else if (*token == JsonToken::kBeginObject) {
      while (true) {
        absl::StatusOr<JsonToken> key = reader.Next();
        if (!key.ok()) return key.status();
        if (*key == JsonToken::kEndObject) break;
        const bool events = reader.text() == "traceEvents";
        absl::StatusOr<JsonToken> value = reader.Next();
        if (!value.ok()) return value.status();
        if (events && *value == JsonToken::kBeginArray && !found) {
          found = true;
          if (absl::Status bad = ReadEvents(reader, limits.max_string_bytes, builder); !bad.ok()) {
            return bad;
          }
        } else if (absl::Status bad = reader.SkipContainer(); !bad.ok()) {
          return bad;
        }
      }
    } else if (absl::Status bad = reader.SkipContainer(); !bad.ok()) {
      return bad;
    }
    // The whole file must be JSON, as before it was read in one piece.
    absl::StatusOr<JsonToken> end = reader.Next();
    return end.ok() ? absl::OkStatus() : end.status();
  };
  if (absl::Status bad = read(); !bad.ok()) {
    std::string reason(bad.message());
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    if (absl::IsResourceExhausted(bad)) {
      return absl::ResourceExhaustedError(fmt::format("'{}': not read: {}", path, reason));
    }
    if (!absl::IsInvalidArgument(bad)) return absl::Status(bad.code(), reason);
    return absl::InvalidArgumentError(fmt::format("'{}': not valid JSON: {}", path, reason));
  }
  if (!found) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}': no trace events (expected {{\"traceEvents\": [...]}} or a JSON array)", path));
  }
  return std::move(builder).Finish();
}

}  // namespace

bool TraceIdLess(const TraceId& a, const TraceId& b) {
  int64_t x = 0, y = 0;
  const bool a_number = absl::SimpleAtoi(a, &x), b_number = absl::SimpleAtoi(b, &y);
  if (a_number && b_number) return x < y || (x == y && a < b);
  if (a_number != b_number) return a_number;
  return a < b;
}

absl::StatusOr<Trace> ParseChromeTrace(const std::string& json, const std::string& path,
                                       const TraceLimits& limits) {
  JsonPullReader reader(
      json, {.max_depth = limits.max_depth, .max_string_bytes = limits.max_string_bytes});
  return ReadTrace(reader, path, limits);
}

absl::StatusOr<Trace> ReadChromeTrace(const std::string& path, const TraceLimits& limits) {
  absl::StatusOr<std::unique_ptr<io::RandomAccessFile>> file = io::RandomAccessFile::Open(path);
  if (!file.ok()) return file.status();
  uint64_t offset = 0;
  JsonPullReader reader(
      [&](char* dst, size_t n) -> absl::StatusOr<size_t> {
        absl::StatusOr<size_t> got = (*file)->ReadUpTo(offset, n, dst);
        if (got.ok()) offset += *got;
        return got;
      },
      {.max_depth = limits.max_depth, .max_string_bytes = limits.max_string_bytes});
  return ReadTrace(reader, path, limits);
}

}  // namespace rill::cli
