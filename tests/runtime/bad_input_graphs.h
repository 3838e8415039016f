// Graphs with hostile sizes and values, as a client could send them: shapes
// whose element count overflows int64, constants and feeds far larger than
// the data they carry, and the integer quotients that trap in plain C++.
// Each must end in a clean error (or a defined result) with the process up.
#ifndef RILL_TESTS_RUNTIME_BAD_INPUT_GRAPHS_H_
#define RILL_TESTS_RUNTIME_BAD_INPUT_GRAPHS_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "graph/proto/graph.pb.h"
#include "graph/tensor.h"
#include "runtime/session.h"

namespace rill::testing {

// The limit on one tensor's bytes the cases assume (SessionOptions::
// max_tensor_bytes, or `rill server --max_tensor_bytes`), so that the
// refusals need no real memory.
inline constexpr size_t kBadInputTensorLimit = size_t{1} << 20;

struct BadInputCase {
  std::string name;
  GraphDef graph;  // Every node on the device the case was made for.
  std::vector<std::pair<std::string, Tensor>> feeds;
  std::string fetch;
  absl::StatusCode code;
  std::string node;  // The node the error must name.
};

// The cases with every node on `device` ("" for no device).
std::vector<BadInputCase> BadInputCases(const std::string& device);

// Makes a session for the case's graph with `options` and runs the fetch
// once: the status of whichever step fails first.
absl::Status RunBadInputCase(const SessionOptions& options, const BadInputCase& c);

// Runs x * x + 1 on `device` (empty: unplaced), fed x = 3, with a new
// session from `options`, and expects 10: the step that must keep working
// after each case.
void ExpectGoodStepRuns(const SessionOptions& options, const std::string& device);

// INT_MIN / -1 and its remainder for every integer division op, int32 and
// int64, on `device`; fetched as "<Op>_<type>" ("Div_int32", ...).
GraphDef MostNegativeOverMinusOneGraph(const std::string& device);
std::vector<std::string> MostNegativeOverMinusOneFetches();
// Checks the fetched values against two's complement wrapping: the most
// negative value for a quotient, 0 for a remainder.
void ExpectWrappedQuotients(const std::vector<std::string>& fetches,
                            const std::vector<Tensor>& values);

}  // namespace rill::testing

#endif  // RILL_TESTS_RUNTIME_BAD_INPUT_GRAPHS_H_
