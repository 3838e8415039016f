// MetaGraphDef files (.meta): a graph with its saver and collections, as
// TensorFlow's export_meta_graph writes them; and the SavedModel that holds
// such graphs.
#ifndef RILL_RUNTIME_TRAINING_META_GRAPH_H_
#define RILL_RUNTIME_TRAINING_META_GRAPH_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/proto/graph.pb.h"
#include "graph/proto/meta_graph.pb.h"
#include "io/env.h"

namespace rill {

// The .meta file of a checkpoint prefix: the prefix with any trailing
// "-?????-of-?????" shard suffix removed, then ".meta".
std::string MetaGraphFilename(const std::string& prefix);

// Reads a MetaGraphDef in binary or text format, or the first meta graph
// of a SavedModel (saved_model.pb). Errors name the file and, for binary
// input, the byte offset where parsing stopped.
absl::StatusOr<MetaGraphDef> ReadMetaGraph(const std::string& path,
                                           io::Env* env = io::Env::Default());

// Writes `meta` in binary, atomically and durably.
absl::Status WriteMetaGraph(const std::string& path, const MetaGraphDef& meta,
                            io::Env* env = io::Env::Default());

// A MetaGraphDef of `graph` with `saver` (may be null), its op list
// stripped to the ops the graph uses.
MetaGraphDef MakeMetaGraph(const GraphDef& graph, const SaverDef* saver);

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_META_GRAPH_H_
