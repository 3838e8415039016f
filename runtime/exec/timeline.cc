#include "runtime/exec/timeline.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "io/posix_file.h"

namespace rill {
namespace {

// A JSON string. Bytes outside printable ASCII are escaped too, so that the
// trace stays valid JSON whatever a name holds.
std::string Quoted(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte >= 0x7f) {
      out += absl::StrFormat("\\u%04x", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// "/job:J/replica:0/task:T/device:CPU:0" -> the task and "/device:CPU:0";
// a name without a task is all device.
std::pair<std::string, std::string> SplitDevice(const std::string& name) {
  const size_t at = name.find("/device:");
  if (at == std::string::npos || at == 0) return {"", name};
  return {name.substr(0, at), name.substr(at)};
}

class EventList {
 public:
  void Add(std::string event) {
    if (!json_.empty()) json_ += ",\n";
    json_ += std::move(event);
  }
  // A metadata event naming or ordering a process (tid 0) or a track.
  void Meta(absl::string_view what, int pid, int tid, absl::string_view args) {
    Add(absl::StrCat("{\"ph\":\"M\",\"name\":", Quoted(what), ",\"pid\":", pid, ",\"tid\":", tid,
                     ",\"args\":{", args, "}}"));
  }
  const std::string& json() const { return json_; }

 private:
  std::string json_;
};

struct Slot {
  int pid = 0;
  int tid = 0;
};

std::string SliceEvent(const NodeExecStats& node, Slot slot, int64_t origin) {
  std::string args =
      absl::StrCat("\"op\":", Quoted(node.op), ",\"output_bytes\":", node.output_bytes);
  if (!node.tensor_name.empty()) absl::StrAppend(&args, ",\"tensor\":", Quoted(node.tensor_name));
  if (!node.peer_device.empty()) absl::StrAppend(&args, ",\"peer\":", Quoted(node.peer_device));
  return absl::StrCat("{\"ph\":\"X\",\"pid\":", slot.pid, ",\"tid\":", slot.tid,
                      ",\"ts\":", node.start_micros - origin,
                      ",\"dur\":", std::max<int64_t>(0, node.end_micros - node.start_micros),
                      ",\"name\":", Quoted(node.node_name), ",\"cat\":", Quoted(node.op),
                      ",\"args\":{", args, "}}");
}

}  // namespace

std::string Timeline::ToChromeTrace() const {
  const std::vector<NodeExecStats>& nodes = metadata_.step_stats;
  int64_t origin = 0;
  if (!nodes.empty()) {
    origin = std::min_element(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
               return a.start_micros < b.start_micros;
             })->start_micros;
  }
  // Task -> device -> its nodes, in name order.
  std::map<std::string, std::map<std::string, std::vector<size_t>>> tasks;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto [task, device] = SplitDevice(nodes[i].device);
    tasks[task][device].push_back(i);
  }
  absl::flat_hash_map<std::string, const TaskClock*> clocks;
  for (const TaskClock& clock : metadata_.task_clocks) clocks[clock.task] = &clock;

  EventList events;
  std::vector<Slot> slots(nodes.size());
  int pid = 0;
  for (const auto& [task, devices] : tasks) {
    ++pid;
    std::string name = task.empty() ? "(no task)" : task;
    if (const auto it = clocks.find(task); it != clocks.end()) {
      absl::StrAppendFormat(&name, " (clock %+d us from the gatherer's, network %d us)",
                            it->second->offset_micros, it->second->network_micros);
    } else if (!clocks.empty()) {
      absl::StrAppend(&name, " (the clock of this trace)");
    }
    events.Meta("process_name", pid, 0, absl::StrCat("\"name\":", Quoted(name)));
    events.Meta("process_sort_index", pid, 0, absl::StrCat("\"sort_index\":", pid));
    int tid = 0;
    for (const auto& [device, members] : devices) {
      std::vector<size_t> order = members;
      std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return std::tie(nodes[a].start_micros, nodes[a].end_micros, a) <
               std::tie(nodes[b].start_micros, nodes[b].end_micros, b);
      });
      // Greedy lanes: a node goes to the first track that is free by its
      // start, so that the fewest tracks hold every overlap.
      std::vector<int64_t> lane_end;
      std::vector<int> lane_tid;
      for (const size_t i : order) {
        const NodeExecStats& node = nodes[i];
        size_t lane = 0;
        while (lane < lane_end.size() && lane_end[lane] > node.start_micros) ++lane;
        if (lane == lane_end.size()) {
          lane_end.push_back(0);
          lane_tid.push_back(++tid);
          const std::string track =
              lane == 0 ? device : absl::StrFormat("%s #%d", device, lane + 1);
          events.Meta("thread_name", pid, tid, absl::StrCat("\"name\":", Quoted(track)));
          events.Meta("thread_sort_index", pid, tid, absl::StrCat("\"sort_index\":", tid));
        }
        lane_end[lane] = std::max(node.start_micros, node.end_micros);
        slots[i] = Slot{pid, lane_tid[lane]};
        events.Add(SliceEvent(node, slots[i], origin));
      }
      for (const size_t i : order) {
        if (nodes[i].memory_in_use < 0) continue;
        events.Add(absl::StrCat("{\"ph\":\"C\",\"pid\":", pid,
                                ",\"tid\":0,\"ts\":", nodes[i].end_micros - origin,
                                ",\"name\":", Quoted(absl::StrCat("memory ", device)),
                                ",\"args\":{\"bytes\":", nodes[i].memory_in_use, "}}"));
      }
    }
  }

  // A send and its receive share the edge's name and the two devices.
  std::map<std::tuple<std::string, std::string, std::string>, size_t> sends;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].op != "_Send") continue;
    sends.emplace(std::make_tuple(nodes[i].tensor_name, nodes[i].device, nodes[i].peer_device), i);
  }
  int flow = 0;
  for (size_t r = 0; r < nodes.size(); ++r) {
    if (nodes[r].op != "_Recv") continue;
    const auto it =
        sends.find(std::make_tuple(nodes[r].tensor_name, nodes[r].peer_device, nodes[r].device));
    if (it == sends.end()) continue;
    const NodeExecStats& send = nodes[it->second];
    const std::string common = absl::StrCat(
        ",\"id\":", ++flow, ",\"name\":", Quoted(send.tensor_name), ",\"cat\":\"transfer\"");
    events.Add(absl::StrCat("{\"ph\":\"s\",\"pid\":", slots[it->second].pid,
                            ",\"tid\":", slots[it->second].tid,
                            ",\"ts\":", send.start_micros - origin, common, "}"));
    // Bound to the receive's own slice ("bp":"e"), not the next one.
    events.Add(absl::StrCat("{\"ph\":\"f\",\"bp\":\"e\",\"pid\":", slots[r].pid, ",\"tid\":",
                            slots[r].tid, ",\"ts\":", nodes[r].start_micros - origin, common, "}"));
  }

  std::string other = absl::StrCat("\"origin_unix_micros\":", origin, ",\"nodes\":", nodes.size(),
                                   ",\"transfers\":", flow);
  for (const TaskClock& clock : metadata_.task_clocks) {
    absl::StrAppend(&other, ",", Quoted(absl::StrCat("clock offset ", clock.task)), ":",
                    Quoted(absl::StrFormat("%+d us (network %d us)", clock.offset_micros,
                                           clock.network_micros)));
  }
  return absl::StrCat("{\"traceEvents\":[\n", events.json(),
                      "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{", other, "}}\n");
}

absl::Status Timeline::WriteChromeTrace(const std::string& path) const {
  return io::WriteFileAtomically(path, ToChromeTrace());
}

}  // namespace rill
