#include "runtime/distributed/tf_config.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "graph/status_macros.h"

namespace rill {

namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

absl::Status TfConfigError(std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrFormat("TF_CONFIG: %s", problem));
}

const char* KindName(const Value& value) {
  switch (value.kind_case()) {
    case Value::kNullValue:
      return "null";
    case Value::kNumberValue:
      return "a number";
    case Value::kStringValue:
      return "a string";
    case Value::kBoolValue:
      return "a boolean";
    case Value::kStructValue:
      return "an object";
    case Value::kListValue:
      return "a list";
    default:
      return "empty";
  }
}

// The parser reports "MESSAGE\nCONTEXT\n   ^" with CONTEXT cut from its
// current buffer, which need not start where the text does, so the offset
// is found from the text after the caret: a suffix of the text when
// shorter than the parser's 20-character window, else found by search.
std::string DescribeJsonError(std::string_view json, std::string_view message) {
  std::vector<std::string_view> lines;
  for (const absl::string_view line :
       absl::StrSplit(absl::string_view(message.data(), message.size()), '\n')) {
    lines.emplace_back(line.data(), line.size());
  }
  if (lines.size() != 3) return std::string(message);
  const size_t caret = lines[2].find('^');
  if (caret == std::string_view::npos || caret > lines[1].size()) return std::string(lines[0]);
  const std::string_view rest = lines[1].substr(caret);
  constexpr size_t kParserContext = 20;
  const size_t offset = rest.size() < kParserContext ? json.size() - rest.size() : json.find(rest);
  if (offset == std::string_view::npos) return absl::StrFormat("%s near '%s'", lines[0], rest);
  if (rest.empty()) return absl::StrFormat("%s at offset %d (the end)", lines[0], offset);
  return absl::StrFormat("%s at offset %d, before '%s'", lines[0], offset, rest);
}

// A job's tasks: a list of addresses, or an object {"INDEX": address}.
absl::StatusOr<std::map<int, std::string>> JobTasks(const std::string& job, const Value& value) {
  std::map<int, std::string> tasks;
  if (value.kind_case() == Value::kListValue) {
    const auto& values = value.list_value().values();
    for (int i = 0; i < values.size(); ++i) {
      if (values[i].kind_case() != Value::kStringValue) {
        return TfConfigError(absl::StrFormat("cluster.%s[%d] is %s, not a \"HOST:PORT\" string",
                                             job, i, KindName(values[i])));
      }
      tasks[i] = values[i].string_value();
    }
  } else if (value.kind_case() == Value::kStructValue) {
    for (const auto& [key, address] : value.struct_value().fields()) {
      const std::optional<int> index = ParseDecimalInt(key);
      if (!index) {
        return TfConfigError(absl::StrFormat("cluster.%s: key '%s' is not a task index", job, key));
      }
      if (address.kind_case() != Value::kStringValue) {
        return TfConfigError(absl::StrFormat("cluster.%s.%s is %s, not a \"HOST:PORT\" string", job,
                                             key, KindName(address)));
      }
      tasks[*index] = address.string_value();
    }
  } else {
    return TfConfigError(absl::StrFormat(
        "cluster.%s is %s, not a list of addresses or an object of task index -> address", job,
        KindName(value)));
  }
  return tasks;
}

absl::StatusOr<int> TaskIndex(const Value& value) {
  if (value.kind_case() == Value::kStringValue) {
    // TensorFlow reads the index with int(), which takes "1" too.
    if (const std::optional<int> index = ParseDecimalInt(value.string_value())) return *index;
    return TfConfigError(
        absl::StrFormat("task.index '%s' is not a non-negative integer", value.string_value()));
  }
  const double number = value.number_value();
  if (value.kind_case() != Value::kNumberValue || number != std::floor(number) || number < 0 ||
      number > std::numeric_limits<int>::max()) {
    return TfConfigError(absl::StrFormat("task.index is %s, not a non-negative integer",
                                         value.kind_case() == Value::kNumberValue
                                             ? absl::StrFormat("%g", number)
                                             : std::string(KindName(value))));
  }
  return static_cast<int>(number);
}

}  // namespace

absl::StatusOr<ServerConfig> ServerConfigFromTfConfig(std::string_view json) {
  Struct root;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &root);
  if (!parsed.ok()) {
    return TfConfigError(absl::StrFormat("invalid JSON: %s",
                                         DescribeJsonError(json, std::string(parsed.message()))));
  }
  const auto& fields = root.fields();
  const auto cluster = fields.find("cluster");
  if (cluster == fields.end()) return absl::InvalidArgumentError("TF_CONFIG has no cluster");
  if (cluster->second.kind_case() != Value::kStructValue) {
    return TfConfigError(
        absl::StrFormat("cluster is %s, not an object", KindName(cluster->second)));
  }
  std::map<std::string, std::map<int, std::string>> jobs;
  for (const auto& [job, tasks] : cluster->second.struct_value().fields()) {
    ASSIGN_OR_RETURN(jobs[job], JobTasks(job, tasks));
  }
  ServerConfig config;
  auto spec = ClusterSpec::FromSparseJobs(jobs);
  if (!spec.ok()) return TfConfigError(std::string(spec.status().message()));
  config.cluster = *std::move(spec);

  const auto task = fields.find("task");
  if (task == fields.end()) return absl::InvalidArgumentError("TF_CONFIG has no task");
  if (task->second.kind_case() != Value::kStructValue) {
    return TfConfigError(absl::StrFormat("task is %s, not an object", KindName(task->second)));
  }
  const auto& task_fields = task->second.struct_value().fields();
  const auto type = task_fields.find("type");
  if (type == task_fields.end()) return TfConfigError("task has no type");
  if (type->second.kind_case() != Value::kStringValue) {
    return TfConfigError(
        absl::StrFormat("task.type is %s, not a job name", KindName(type->second)));
  }
  config.task.job = type->second.string_value();
  // TensorFlow takes a missing index as 0.
  if (const auto index = task_fields.find("index"); index != task_fields.end()) {
    ASSIGN_OR_RETURN(config.task.index, TaskIndex(index->second));
  }
  RETURN_IF_ERROR(config.cluster.CheckTask(config.task, "TF_CONFIG task"));
  if (const auto keys = fields.find("curve_keys"); keys != fields.end()) {
    if (keys->second.kind_case() != Value::kStringValue || keys->second.string_value().empty()) {
      return TfConfigError(
          absl::StrFormat("curve_keys is %s, not a key directory", KindName(keys->second)));
    }
    config.curve_keys = keys->second.string_value();
  }
  return config;
}

}  // namespace rill
