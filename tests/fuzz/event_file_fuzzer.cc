// An event file (TFRecord framing) as rill's record reader reads it: each
// record checked and parsed as an Event; summaries go through a
// SummaryWriter into a new event file, graphs through import, as
// TensorBoard would show them. The input is the file itself, or, when it
// starts with kPartSeparator, the records' contents (one part each), which
// the target frames with their CRCs so that the fuzzer reaches the Event
// parsing. Invariants: framed records read back unchanged, and what the
// SummaryWriter writes reads back as events.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/graph_io.h"
#include "graph/proto/event.pb.h"
#include "io/record_reader.h"
#include "io/record_writer.h"
#include "ops/registry.h"
#include "runtime/training/summary_writer.h"
#include "tests/fuzz/fuzz_util.h"

namespace rill::fuzz {
namespace {

std::string WriteRecords(const std::vector<std::string_view>& records, const std::string& path) {
  absl::StatusOr<std::unique_ptr<RecordWriter>> writer = RecordWriter::Open(path);
  Check(writer.ok(), "cannot create the record file");
  for (std::string_view record : records) {
    Check((*writer)->WriteRecord(record).ok(), "cannot write a record");
  }
  Check((*writer)->Close().ok(), "cannot close the record file");
  return path;
}

// The events' summaries into a new event file, read back.
void Rewrite(const std::vector<Event>& events, const std::string& logdir) {
  absl::StatusOr<std::unique_ptr<SummaryWriter>> writer = SummaryWriter::Create(logdir);
  Check(writer.ok(), "cannot create a summary writer");
  int written = 1;  // The file_version event.
  for (const Event& event : events) {
    if (!event.has_summary()) continue;
    Check((*writer)->AddSummary(event.summary().SerializeAsString(), event.step()).ok(),
          "a parsed summary cannot be added");
    ++written;
  }
  Check((*writer)->Close().ok(), "cannot close the summary writer");
  absl::StatusOr<std::vector<std::string>> records = ReadAllRecords((*writer)->path());
  Check(records.ok() && static_cast<int>(records->size()) == written,
        "a summary writer's file does not read back");
  for (const std::string& record : *records) {
    Event event;
    Check(event.ParseFromString(record), "a summary writer's record is not an Event");
  }
}

}  // namespace
}  // namespace rill::fuzz

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  rill::fuzz::Initialize(size_t{64} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  const std::string_view input = fuzz::AsView(data, size);
  const std::string dir = fuzz::FreshScratchDir("events");
  const std::string path = dir + "/events.out.tfevents";
  const bool framed = input.starts_with(fuzz::kPartSeparator);
  std::vector<std::string_view> payloads;
  if (framed) {
    payloads = fuzz::Split(input.substr(fuzz::kPartSeparator.size()), fuzz::kPartSeparator);
    fuzz::WriteRecords(payloads, path);
  } else {
    fuzz::WriteFile(path, input);
  }

  absl::StatusOr<std::unique_ptr<RecordReader>> reader = RecordReader::Open(path);
  fuzz::Check(reader.ok(), "cannot open the record file");
  std::vector<Event> events;
  size_t index = 0;
  while (true) {
    absl::StatusOr<std::string> record = (*reader)->ReadRecord();
    if (!record.ok()) {
      fuzz::Check(!framed || (absl::IsOutOfRange(record.status()) && index == payloads.size()),
                  "framed records do not read back to their end");
      break;
    }
    fuzz::Check(!framed || (index < payloads.size() && *record == payloads[index]),
                "a framed record reads back changed");
    ++index;
    Event event;
    if (!event.ParseFromString(*record)) continue;
    if (event.what_case() == Event::kGraphDef) {
      absl::StatusOr<GraphDef> graph =
          ParseGraphDef(event.graph_def(), GraphFormat::kBinary, "event");
      if (graph.ok()) (void)ImportGraphDef(*graph, StandardOps());
    }
    events.push_back(std::move(event));
  }
  if (!events.empty()) fuzz::Rewrite(events, dir + "/rewritten");
  return 0;
}
