#include "runtime/training/meta_graph.h"

#include <regex>
#include <set>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/text_proto.h"
#include "io/posix_file.h"
#include "ops/registry.h"

namespace rill {

std::string MetaGraphFilename(const std::string& prefix) {
  static const std::regex kShardSuffix("-[\\d\\?]+-of-\\d+$");
  return std::regex_replace(prefix, kShardSuffix, "") + ".meta";
}

absl::StatusOr<MetaGraphDef> ReadMetaGraph(const std::string& path, io::Env* env) {
  ASSIGN_OR_RETURN(const std::string bytes, io::ReadFileToString(path, env));
  MetaGraphDef meta;
  // A SavedModel starts with its schema version (field 1, a varint); a
  // MetaGraphDef with its meta_info_def (field 1, length-delimited).
  if (!bytes.empty() && bytes[0] == '\x08') {
    SavedModel saved;
    if (saved.ParseFromString(bytes)) {
      if (saved.meta_graphs_size() == 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("'%s': the SavedModel holds no meta graph", path));
      }
      return saved.meta_graphs(0);
    }
  }
  if (meta.ParseFromString(bytes)) return meta;
  meta.Clear();
  const absl::Status text = ParseTextProto(bytes, &meta, path);
  if (text.ok()) return meta;
  return absl::InvalidArgumentError(absl::StrFormat(
      "'%s' (%d bytes) is not a binary MetaGraphDef or SavedModel, nor a text one (%s)", path,
      bytes.size(), std::string(text.message())));
}

absl::Status WriteMetaGraph(const std::string& path, const MetaGraphDef& meta, io::Env* env) {
  std::string bytes;
  if (!meta.SerializeToString(&bytes)) {
    return absl::InternalError(absl::StrFormat("cannot serialize the meta graph for '%s'", path));
  }
  return io::WriteFileAtomically(path, bytes, env);
}

MetaGraphDef MakeMetaGraph(const GraphDef& graph, const SaverDef* saver) {
  MetaGraphDef meta;
  *meta.mutable_graph_def() = graph;
  if (saver != nullptr) *meta.mutable_saver_def() = *saver;
  std::set<std::string> ops;
  for (const NodeDef& node : graph.node()) ops.insert(node.op());
  OpList* stripped = meta.mutable_meta_info_def()->mutable_stripped_op_list();
  for (const std::string& op : ops) {
    if (const OpRegistration* reg = StandardOps().Find(op)) *stripped->add_op() = reg->op_def;
  }
  return meta;
}

}  // namespace rill
