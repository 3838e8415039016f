#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/graph_file.h"
#include "fmt/core.h"
#include "graph/allocator.h"
#include "graph/graph.h"
#include "graph/graph_io.h"
#include "graph/graph_summary.h"
#include "graph/status_macros.h"
#include "ops/registry.h"

namespace rill::cli {
namespace {

constexpr char kUsage[] =
    "usage: rill graph FILE [--to_text OUT | --to_binary OUT] [--max_tensor_bytes N]\n"
    "  FILE: a GraphDef (.pb or .pbtxt), a MetaGraphDef (.meta) or a SavedModel\n"
    "  (saved_model.pb), whose graph is read; --to_text and --to_binary write that graph\n";

int Fail(const absl::Status &status) {
  fmt::print(stderr, "rill graph: {}\n", OneLine(std::string(status.message())));
  return 1;
}

}  // namespace

int RunGraphCommand(const std::vector<std::string> &args) {
  auto parsed = ParseArgs(args, {"to_text", "to_binary", "max_tensor_bytes"}, {});
  if (parsed.ok() && parsed->help) return PrintHelp(kUsage);
  if (!parsed.ok() || parsed->positional.size() != 1 ||
      (parsed->Value("to_text") && parsed->Value("to_binary"))) {
    if (!parsed.ok())
      fmt::print(stderr, "rill graph: {}\n", std::string(parsed.status().message()));
    std::fputs(kUsage, stderr);
    return 2;
  }
  absl::StatusOr<std::optional<size_t>> max_tensor_bytes = ParseMaxTensorBytesFlag(*parsed);
  if (!max_tensor_bytes.ok()) {
    fmt::print(stderr, "rill graph: {}\n{}", std::string(max_tensor_bytes.status().message()),
               kUsage);
    return 2;
  }
  if (*max_tensor_bytes) SetMaxTensorBytes(**max_tensor_bytes);
  const std::string &path = parsed->positional[0];
  absl::StatusOr<LoadedGraph> loaded = LoadGraphFile(path);
  if (!loaded.ok()) return Fail(loaded.status());
  const GraphDef &def = loaded->graph;
  auto graph = ImportGraphDef(def, StandardOps());
  if (!graph.ok()) {
    return Fail(absl::InvalidArgumentError(
        fmt::format("{}: {}", path, std::string(graph.status().message()))));
  }

  const auto to_text = parsed->Value("to_text");
  const auto to_binary = parsed->Value("to_binary");
  if (to_text || to_binary) {
    const std::string &out = to_text ? *to_text : *to_binary;
    // The input is written back as read (validated, not rewritten with
    // defaults), so a conversion changes only the encoding; of a .meta file
    // or a SavedModel, the graph is written.
    if (auto status = WriteGraphDef(def, out, to_text ? GraphFormat::kText : GraphFormat::kBinary);
        !status.ok()) {
      return Fail(status);
    }
    fmt::print("{}: valid, {} nodes; wrote {} ({})\n", path, (*graph)->num_nodes(), out,
               to_text ? "text" : "binary");
    return 0;
  }
  fmt::print("{}: valid GraphDef\n{}", path, FormatGraphSummary(SummarizeGraph(**graph)));
  return 0;
}

}  // namespace rill::cli
