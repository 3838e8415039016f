// GraphDefs for tests written as text protos (a graph, the functions of its
// library, its Placeholders), and one step of such a graph in a Session.
#ifndef RILL_TESTS_GRAPH_GRAPH_TEXT_H_
#define RILL_TESTS_GRAPH_GRAPH_TEXT_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/proto/graph.pb.h"
#include "graph/status_macros.h"
#include "graph/text_proto.h"
#include "gtest/gtest.h"
#include "runtime/session.h"

namespace rill::testing {

inline std::string PlaceholderText(const std::string& name, const std::string& type) {
  return "node { name: '" + name + "' op: 'Placeholder' attr { key: 'dtype' value { type: " + type +
         " } } }";
}

// `text` (GraphDef nodes) with `functions` (FunctionDefs) in its library;
// a parse error fails the test.
inline GraphDef ParseGraph(const std::string& text, const std::vector<const char*>& functions) {
  GraphDef graph;
  const absl::Status parsed = ParseTextProto(text, &graph, "graph");
  EXPECT_TRUE(parsed.ok()) << parsed;
  for (const char* function : functions) {
    const absl::Status status =
        ParseTextProto(function, graph.mutable_library()->add_function(), "function");
    EXPECT_TRUE(status.ok()) << status;
  }
  return graph;
}

// One step of `graph` in a new local Session.
inline absl::StatusOr<std::vector<Tensor>> RunGraph(
    const GraphDef& graph, const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches) {
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(SessionOptions(), graph));
  return session->Run(feeds, fetches);
}

}  // namespace rill::testing

#endif  // RILL_TESTS_GRAPH_GRAPH_TEXT_H_
