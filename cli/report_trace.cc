#include "cli/report_trace.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "fmt/core.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace rill::cli {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

// A tooltip longer than this is not read; huge args would only bloat the page.
constexpr size_t kMaxArgsText = 240;

const Value* Field(const Struct& object, const char* key) {
  const auto it = object.fields().find(key);
  return it == object.fields().end() ? nullptr : &it->second;
}

const Struct* ObjectField(const Struct& object, const char* key) {
  const Value* value = Field(object, key);
  return value != nullptr && value->kind_case() == Value::kStructValue ? &value->struct_value()
                                                                       : nullptr;
}

// Numbers, and numbers written as strings, which some tracers emit for
// timestamps to keep their precision.
std::optional<double> Number(const Value* value) {
  if (value == nullptr) return std::nullopt;
  double parsed = 0;
  if (value->kind_case() == Value::kNumberValue) {
    parsed = value->number_value();
  } else if (value->kind_case() != Value::kStringValue ||
             !absl::SimpleAtod(value->string_value(), &parsed)) {
    return std::nullopt;
  }
  if (!std::isfinite(parsed)) return std::nullopt;
  return parsed;
}

std::string Text(const Value* value) {
  if (value == nullptr) return "";
  switch (value->kind_case()) {
    case Value::kStringValue:
      return value->string_value();
    case Value::kNumberValue: {
      const double number = value->number_value();
      if (number == std::floor(number) && std::abs(number) < 1e15) {
        return fmt::format("{}", static_cast<int64_t>(number));
      }
      return fmt::format("{}", number);
    }
    case Value::kBoolValue:
      return value->bool_value() ? "true" : "false";
    case Value::kNullValue:
      return "null";
    default: {
      std::string json;
      if (!google::protobuf::util::MessageToJsonString(*value, &json).ok()) return "?";
      return json;
    }
  }
}

// A missing pid or tid is 0, as chrome://tracing takes it.
TraceId Id(const Value* value) { return value == nullptr ? "0" : Text(value); }

std::string ArgsText(const Struct* args) {
  if (args == nullptr) return "";
  // Sorted: protobuf's map order is unspecified, and the page should not
  // change between two runs on the same trace.
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [key, value] : args->fields()) entries.emplace_back(key, Text(&value));
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

TraceSlice MakeSlice(const Struct& event, const TraceId& pid, const TraceId& tid, double ts,
                     double dur) {
  TraceSlice slice;
  slice.pid = pid;
  slice.tid = tid;
  slice.ts = ts;
  slice.dur = dur;
  slice.name = Text(Field(event, "name"));
  slice.cat = Text(Field(event, "cat"));
  slice.args = ArgsText(ObjectField(event, "args"));
  return slice;
}

void ReadMetadata(const Struct& event, const TraceId& pid, const TraceId& tid, Trace& trace) {
  const Struct* args = ObjectField(event, "args");
  if (args == nullptr) return;
  const std::string kind = Text(Field(event, "name"));
  if (kind == "process_name") {
    trace.process_names[pid] = Text(Field(*args, "name"));
  } else if (kind == "thread_name") {
    trace.thread_names[{pid, tid}] = Text(Field(*args, "name"));
  } else if (kind == "process_sort_index") {
    if (const auto index = Number(Field(*args, "sort_index"))) {
      trace.process_sort_index[pid] = *index;
    }
  } else if (kind == "thread_sort_index") {
    if (const auto index = Number(Field(*args, "sort_index"))) {
      trace.thread_sort_index[{pid, tid}] = *index;
    }
  }
}

struct FlowEnd {
  TraceId pid, tid;
  double ts = 0;
  std::string name;
};

}  // namespace

bool TraceIdLess(const TraceId& a, const TraceId& b) {
  int64_t x = 0, y = 0;
  const bool a_number = absl::SimpleAtoi(a, &x), b_number = absl::SimpleAtoi(b, &y);
  if (a_number && b_number) return x < y || (x == y && a < b);
  if (a_number != b_number) return a_number;
  return a < b;
}

absl::StatusOr<Trace> ParseChromeTrace(const std::string& json, const std::string& path) {
  Value root;
  const auto parsed = google::protobuf::util::JsonStringToMessage(json, &root);
  if (!parsed.ok()) {
    const auto message = parsed.message();
    std::string reason(message.data(), message.size());
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    return absl::InvalidArgumentError(fmt::format("'{}': not valid JSON: {}", path, reason));
  }
  const Value* events = &root;
  if (root.kind_case() == Value::kStructValue) events = Field(root.struct_value(), "traceEvents");
  if (events == nullptr || events->kind_case() != Value::kListValue) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}': no trace events (expected {{\"traceEvents\": [...]}} or a JSON array)", path));
  }

  Trace trace;
  std::map<std::pair<TraceId, TraceId>, std::vector<TraceSlice>> open_slices;  // "B" awaiting "E".
  std::map<std::string, FlowEnd> flow_starts, flow_finishes;  // By category and id.
  std::map<std::pair<TraceId, std::string>, TraceCounter> counters;
  for (const Value& item : events->list_value().values()) {
    if (item.kind_case() != Value::kStructValue) {
      ++trace.skipped_events;
      continue;
    }
    const Struct& event = item.struct_value();
    const std::string phase = Text(Field(event, "ph"));
    const TraceId pid = Id(Field(event, "pid")), tid = Id(Field(event, "tid"));
    if (phase == "M") {
      ReadMetadata(event, pid, tid, trace);
      continue;
    }
    // Instant, async, object and sample events are not drawn.
    if (phase != "X" && phase != "B" && phase != "E" && phase != "s" && phase != "f" &&
        phase != "C") {
      continue;
    }
    const std::optional<double> ts = Number(Field(event, "ts"));
    if (!ts) {
      ++trace.skipped_events;
      continue;
    }
    if (phase == "X") {
      const std::optional<double> dur = Number(Field(event, "dur"));
      if (!dur || *dur < 0) {
        ++trace.skipped_events;
        continue;
      }
      trace.slices.push_back(MakeSlice(event, pid, tid, *ts, *dur));
    } else if (phase == "B") {
      open_slices[{pid, tid}].push_back(MakeSlice(event, pid, tid, *ts, 0));
    } else if (phase == "E") {
      auto& stack = open_slices[{pid, tid}];
      if (stack.empty()) {
        ++trace.skipped_events;
        continue;
      }
      TraceSlice slice = std::move(stack.back());
      stack.pop_back();
      slice.dur = std::max(0.0, *ts - slice.ts);
      trace.slices.push_back(std::move(slice));
    } else if (phase == "s" || phase == "f") {
      const Value* id = Field(event, "id");
      if (id == nullptr) {
        ++trace.skipped_events;
        continue;
      }
      const std::string key = Text(Field(event, "cat")) + '\n' + Text(id);
      (phase == "s" ? flow_starts : flow_finishes)
          .emplace(key, FlowEnd{pid, tid, *ts, Text(Field(event, "name"))});
    } else {
      const Struct* args = ObjectField(event, "args");
      if (args == nullptr) {
        ++trace.skipped_events;
        continue;
      }
      const std::string name = Text(Field(event, "name"));
      TraceCounter& counter = counters[{pid, name}];
      counter.pid = pid;
      counter.name = name;
      for (const auto& [key, value] : args->fields()) {
        if (const auto number = Number(&value)) counter.series[key].emplace_back(*ts, *number);
      }
    }
  }
  for (const auto& [track, stack] : open_slices) trace.skipped_events += stack.size();

  for (const auto& [key, start] : flow_starts) {
    const auto finish = flow_finishes.find(key);
    if (finish == flow_finishes.end()) {
      ++trace.skipped_events;
      continue;
    }
    TraceFlow flow;
    flow.id = key.substr(key.find('\n') + 1);
    flow.name = start.name;
    flow.from_pid = start.pid;
    flow.from_tid = start.tid;
    flow.from_ts = start.ts;
    flow.to_pid = finish->second.pid;
    flow.to_tid = finish->second.tid;
    flow.to_ts = finish->second.ts;
    trace.flows.push_back(std::move(flow));
    flow_finishes.erase(finish);
  }
  trace.skipped_events += flow_finishes.size();

  // Parents before their children, so that nesting can be found in one pass.
  std::stable_sort(trace.slices.begin(), trace.slices.end(),
                   [](const TraceSlice& a, const TraceSlice& b) {
                     return std::tie(a.ts, b.dur) < std::tie(b.ts, a.dur);
                   });
  for (auto& [key, counter] : counters) {
    for (auto& [arg, points] : counter.series) std::stable_sort(points.begin(), points.end());
    if (!counter.series.empty()) trace.counters.push_back(std::move(counter));
  }
  return trace;
}

}  // namespace rill::cli
