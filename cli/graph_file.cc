#include "cli/graph_file.h"

#include <filesystem>
#include <utility>

#include "graph/graph_io.h"
#include "graph/status_macros.h"
#include "runtime/training/meta_graph.h"

namespace rill::cli {

absl::StatusOr<LoadedGraph> LoadGraphFile(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  if (!path.ends_with(".meta") && !name.starts_with("saved_model.")) {
    ASSIGN_OR_RETURN(GraphDef graph, ReadGraphDef(path));
    return LoadedGraph{std::move(graph), std::nullopt};
  }
  ASSIGN_OR_RETURN(MetaGraphDef meta, ReadMetaGraph(path));
  LoadedGraph loaded{std::move(*meta.mutable_graph_def()), std::nullopt};
  if (meta.has_saver_def()) loaded.saver = meta.saver_def();
  return loaded;
}

}  // namespace rill::cli
