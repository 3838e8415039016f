// The graph files the commands read: a GraphDef (.pb or .pbtxt), or the
// graph and saver of a MetaGraphDef (.meta) or a SavedModel (saved_model.pb).
#ifndef RILL_CLI_GRAPH_FILE_H_
#define RILL_CLI_GRAPH_FILE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "graph/proto/graph.pb.h"
#include "graph/proto/meta_graph.pb.h"

namespace rill::cli {

// A graph file and the saver that came with it (a .meta file's or a
// SavedModel's), if any.
struct LoadedGraph {
  GraphDef graph;
  std::optional<SaverDef> saver;
};

// Reads `path` by its name: a "*.meta" or "saved_model.*" file holds a
// MetaGraphDef (its graph_def and saver_def are taken), any other file a
// GraphDef, binary or text. Errors name the file.
absl::StatusOr<LoadedGraph> LoadGraphFile(const std::string& path);

}  // namespace rill::cli

#endif  // RILL_CLI_GRAPH_FILE_H_
