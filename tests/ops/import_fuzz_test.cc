// Deterministic fuzzing of GraphDef reading and import: damaged bytes,
// random bytes and text, and structurally mutated graphs must each give a
// Status (success or a clear error), never a crash or a hang. Seeds are
// fixed and the case counts bounded, so a failure reproduces.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/logging.h"
#include "graph/graph.h"
#include "graph/graph_io.h"
#include "graph/node_def_util.h"
#include "ops/registry.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::ReadFileOrDie;
using ::rill::testing::TestDataDir;

struct TestGraph {
  std::string name;
  std::string bytes;
};

std::vector<TestGraph> TestGraphs() {
  std::vector<TestGraph> graphs;
  std::error_code error;
  const std::string dir = TestDataDir() + "/tf_graphs";
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string extension = entry.path().extension().string();
    if (extension == ".pb" || extension == ".pbtxt") {
      graphs.push_back({entry.path().filename().string(), ReadFileOrDie(entry.path().string())});
    }
  }
  std::sort(graphs.begin(), graphs.end(),
            [](const TestGraph& a, const TestGraph& b) { return a.name < b.name; });
  return graphs;
}

// What happened to the inputs of one test, so that a test can check that
// its inputs reached the importer and not only the parser.
struct Outcomes {
  int parse_errors = 0;
  int import_errors = 0;
  int imported = 0;
};

// The invariants every input must keep: errors are statuses with messages
// in the documented forms.
void Import(const GraphDef& def, Outcomes& outcomes) {
  auto graph = ImportGraphDef(def, StandardOps());
  if (graph.ok()) {
    ++outcomes.imported;
    EXPECT_EQ((*graph)->num_nodes(), def.node_size());
    return;
  }
  ++outcomes.import_errors;
  const std::string message(graph.status().message());
  EXPECT_TRUE(message.starts_with("node '") || message.starts_with("graph has a cycle: "))
      << message;
}

void ParseAndImport(std::string_view bytes, Outcomes& outcomes) {
  auto def = ParseGraphDef(bytes, DetectGraphFormat(bytes), "fuzz");
  if (!def.ok()) {
    ++outcomes.parse_errors;
    EXPECT_EQ(def.status().code(), absl::StatusCode::kInvalidArgument) << def.status();
    EXPECT_TRUE(std::string(def.status().message()).starts_with("fuzz")) << def.status();
    return;
  }
  Import(*def, outcomes);
}

class Random {
 public:
  explicit Random(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, n). REQUIRES: n > 0.
  int Below(int n) { return std::uniform_int_distribution<int>(0, n - 1)(engine_); }
  bool OneIn(int n) { return Below(n) == 0; }
  char Byte() { return static_cast<char>(Below(256)); }
  template <typename T>
  const T& Pick(const std::vector<T>& items) {
    return items[Below(static_cast<int>(items.size()))];
  }

 private:
  std::mt19937_64 engine_;
};

void MutateBytes(Random& random, std::string& bytes) {
  const int edits = 1 + random.Below(4);
  for (int e = 0; e < edits; ++e) {
    const int size = static_cast<int>(bytes.size());
    const int at = random.Below(size + 1);
    switch (random.Below(5)) {
      case 0:
        if (at < size) bytes[at] = static_cast<char>(bytes[at] ^ (1 << random.Below(8)));
        break;
      case 1:
        if (at < size) bytes[at] = random.Byte();
        break;
      case 2: bytes.insert(bytes.begin() + at, random.Byte()); break;
      case 3: bytes.erase(at, 1 + random.Below(8)); break;
      default: bytes.insert(at, bytes.substr(random.Below(size + 1), random.Below(16))); break;
    }
  }
}

std::string RandomPrintable(Random& random, int length) {
  std::string text;
  for (int i = 0; i < length; ++i) text += static_cast<char>(' ' + random.Below(95));
  return text;
}

// Random text-format tokens: mostly not a GraphDef, but often close to one.
std::string RandomTokens(Random& random) {
  static const std::vector<std::string> kTokens = {
      "node",        "{",         "}",        "name:",     "\"a\"",     "\"b\"",
      "op:",         "\"Const\"", "\"Add\"",  "\"NoOp\"",  "input:",    "\"a:1\"",
      "\"^b\"",      "attr",      "key:",     "\"T\"",     "\"dtype\"", "\"N\"",
      "value",       "type:",     "DT_FLOAT", "DT_INT32",  "i:",        "-1",
      "99999999999", "shape",     "dim",      "size:",     "tensor",    "dtype:",
      "float_val:",  "1.5",       "versions", "producer:", "#",         "\n",
      ":",           "<",         ">"};
  std::string text;
  const int count = random.Below(60);
  for (int i = 0; i < count; ++i) text += random.Pick(kTokens) + " ";
  return text;
}

AttrValue RandomAttrValue(Random& random) {
  AttrValue value;
  switch (random.Below(12)) {
    case 0: value.set_s("x"); break;
    case 1:
      value.set_i(random.Pick<int64_t>({-1, 0, 1, 3, int64_t{1} << 31, int64_t{1} << 40,
                                        std::numeric_limits<int64_t>::max(),
                                        std::numeric_limits<int64_t>::min()}));
      break;
    case 2: value.set_f(std::numeric_limits<float>::quiet_NaN()); break;
    case 3: value.set_b(true); break;
    case 4:
      value.set_type(static_cast<DataType>(random.Pick<int>({0, 1, 3, 7, 9, 20, 101, 999})));
      break;
    case 5: {
      TensorShapeProto* shape = value.mutable_shape();
      const int dims = random.OneIn(8) ? 300 : random.Below(4);
      for (int i = 0; i < dims; ++i) {
        shape->add_dim()->set_size(random.Pick<int64_t>({-5, -1, 0, 2, int64_t{1} << 45}));
      }
      shape->set_unknown_rank(random.OneIn(4));
      break;
    }
    case 6: {
      TensorProto* tensor = value.mutable_tensor();
      tensor->set_dtype(static_cast<DataType>(random.Pick<int>({0, 1, 3, 7, 9, 10, 19, 21, 101})));
      const int dims = random.Below(3);
      for (int i = 0; i < dims; ++i) {
        tensor->mutable_tensor_shape()->add_dim()->set_size(
            random.Pick<int64_t>({-3, 0, 1, 2, int64_t{1} << 45}));
      }
      if (random.OneIn(2)) tensor->set_tensor_content(std::string(random.Below(20), '\x01'));
      for (int i = random.Below(4); i > 0; --i) tensor->add_float_val(1.0f);
      for (int i = random.Below(4); i > 0; --i) tensor->add_int_val(-7);
      break;
    }
    case 7: value.mutable_list()->add_type(DT_FLOAT); break;
    case 8: value.mutable_list()->add_i(-1); break;
    case 9: value.mutable_list(); break;
    case 10: value.mutable_func()->set_name("f"); break;
    default: break;  // No value at all.
  }
  return value;
}

std::string RandomInput(Random& random, const GraphDef& def, int self) {
  const std::string& other = def.node(random.Below(def.node_size())).name();
  const std::string& own = def.node(self).name();
  switch (random.Below(10)) {
    case 0: return "";
    case 1: return random.Pick<std::string>({"^", ":", "a:", "_a", "a:01", "a:first", "x:-1"});
    case 2: return other + ":99999999999";
    case 3: return other + ":2147483647";
    case 4: return own;
    case 5: return "^" + own;
    case 6: return "^" + other;
    case 7: return "missing";
    default: return other + ":" + std::to_string(random.Below(3));
  }
}

TensorProto RandomSmallTensor(Random& random, DataType dtype) {
  TensorProto tensor;
  tensor.set_dtype(dtype);
  int64_t elements = 1;
  for (int d = random.Below(3); d > 0; --d) {
    const int size = random.Below(4);
    tensor.mutable_tensor_shape()->add_dim()->set_size(size);
    elements *= size;
  }
  // Types without a case here stay all zeros (no values given).
  for (int64_t i = 0; i < elements; ++i) {
    const int v = random.Below(7) - 2;
    switch (dtype) {
      case DT_INT64: tensor.add_int64_val(v); break;
      case DT_FLOAT: tensor.add_float_val(static_cast<float>(v)); break;
      case DT_DOUBLE: tensor.add_double_val(v); break;
      case DT_BOOL: tensor.add_bool_val(v > 0); break;
      case DT_STRING: tensor.add_string_val("s"); break;
      case DT_INT32:
      case DT_INT16:
      case DT_INT8: tensor.add_int_val(v); break;
      case DT_UINT8:
      case DT_UINT16: tensor.add_int_val(v + 2); break;
      default: break;
    }
  }
  return tensor;
}

DataType RandomAllowedType(Random& random, const OpDef::AttrDef& attr) {
  if (attr.allowed_values().list().type_size() > 0 && !random.OneIn(10)) {
    const auto& allowed = attr.allowed_values().list().type();
    return static_cast<DataType>(allowed[random.Below(allowed.size())]);
  }
  return random.Pick<DataType>({DT_FLOAT, DT_INT32, DT_INT64, DT_BOOL, DT_STRING, DT_DOUBLE});
}

// A value of the kind the attr wants, mostly within its constraints; now
// and then one of any kind.
AttrValue RandomValueFor(Random& random, const OpDef::AttrDef& attr) {
  if (random.OneIn(60)) return RandomAttrValue(random);
  AttrValue value;
  const std::string& kind = attr.type();
  if (kind == "type") {
    value.set_type(RandomAllowedType(random, attr));
  } else if (kind == "int") {
    value.set_i(random.Below(5) - 1 + (attr.has_minimum() ? attr.minimum() : 0));
  } else if (kind == "float") {
    value.set_f(0.5f);
  } else if (kind == "bool") {
    value.set_b(random.OneIn(2));
  } else if (kind == "string") {
    const auto& allowed = attr.allowed_values().list().s();
    value.set_s(allowed.empty() ? "x" : allowed[random.Below(allowed.size())]);
  } else if (kind == "shape") {
    for (int d = random.Below(4); d > 0; --d) {
      value.mutable_shape()->add_dim()->set_size(random.Below(5) - 1);
    }
    if (random.OneIn(5)) value.mutable_shape()->set_unknown_rank(true);
  } else if (kind == "tensor") {
    *value.mutable_tensor() = RandomSmallTensor(random, RandomAllowedType(random, attr));
  } else if (kind == "list(type)") {
    for (int n = random.Below(3) + 1; n > 0; --n) {
      value.mutable_list()->add_type(RandomAllowedType(random, attr));
    }
  } else if (kind == "list(int)") {
    for (int n = random.Below(5); n > 0; --n) value.mutable_list()->add_i(random.Below(4) - 1);
  } else if (kind == "list(shape)") {
    for (int n = random.Below(3); n > 0; --n) {
      value.mutable_list()->add_shape()->add_dim()->set_size(2);
    }
  } else if (kind == "list(string)") {
    value.mutable_list()->add_s("x");
  } else {
    return attr.default_value();
  }
  return value;
}

// A graph of random standard ops with attrs of the right kinds, mostly fed
// by earlier outputs of the type they expect, and small random Consts whose
// values reach the shape functions. Now and then an input is of another
// type, refers to a later node or to no node at all.
GraphDef RandomGraph(Random& random) {
  static const std::vector<std::string> kOps = StandardOps().OpNames();
  struct Output {
    std::string name;
    DataType type;
  };
  std::vector<Output> outputs;
  GraphDef def;
  constexpr int kConsts = 3;
  const int nodes = kConsts + random.Below(8);
  for (int i = 0; i < nodes; ++i) {
    NodeDef& node = *def.add_node();
    node.set_name(absl::StrCat("n", i));
    node.set_op(i < kConsts || random.OneIn(5) ? "Const" : random.Pick(kOps));
    const OpDef& op = StandardOps().Find(node.op())->op_def;
    for (const OpDef::AttrDef& attr : op.attr()) {
      if (!random.OneIn(60)) (*node.mutable_attr())[attr.name()] = RandomValueFor(random, attr);
    }
    if (node.op() == "Const" && node.attr().contains("dtype") &&
        node.attr().at("dtype").value_case() == AttrValue::kType) {
      *(*node.mutable_attr())["value"].mutable_tensor() =
          RandomSmallTensor(random, node.attr().at("dtype").type());
    }
    NodeDef with_defaults = node;
    AddDefaultsToNodeDef(op, &with_defaults);
    auto signature = ComputeNodeSignature(with_defaults, op);
    const int inputs =
        signature.ok() ? static_cast<int>(signature->input_types.size()) : random.Below(3);
    for (int k = 0; k < inputs; ++k) {
      std::vector<const Output*> matching;
      for (const Output& output : outputs) {
        if (signature.ok() && BaseType(output.type) == BaseType(signature->input_types[k])) {
          matching.push_back(&output);
        }
      }
      if (random.OneIn(150)) {
        node.add_input("missing");
      } else if (random.OneIn(100) || outputs.empty()) {
        node.add_input(absl::StrCat("n", random.Below(nodes)));
      } else if (random.OneIn(20) || !signature.ok()) {
        node.add_input(outputs[random.Below(static_cast<int>(outputs.size()))].name);
      } else if (matching.empty()) {
        // A Const of the wanted type, listed after its consumer.
        const DataType type = BaseType(signature->input_types[k]);
        NodeDef& source = *def.add_node();
        source.set_name(absl::StrCat("c", i, "_", k));
        source.set_op("Const");
        (*source.mutable_attr())["dtype"].set_type(type);
        *(*source.mutable_attr())["value"].mutable_tensor() = RandomSmallTensor(random, type);
        node.add_input(source.name());
      } else {
        node.add_input(matching[random.Below(static_cast<int>(matching.size()))]->name);
      }
    }
    if (signature.ok()) {
      for (size_t k = 0; k < signature->output_types.size(); ++k) {
        outputs.push_back({absl::StrCat(node.name(), ":", k), signature->output_types[k]});
      }
    }
  }
  return def;
}

// One to three random structural edits.
void MutateGraph(Random& random, GraphDef& def) {
  static const std::vector<std::string> kOps = StandardOps().OpNames();
  const int edits = 1 + random.Below(3);
  for (int e = 0; e < edits && def.node_size() > 0; ++e) {
    const int index = random.Below(def.node_size());
    NodeDef& node = *def.mutable_node(index);
    switch (random.Below(10)) {
      case 0:
        if (node.input_size() > 0) {
          node.set_input(random.Below(node.input_size()), RandomInput(random, def, index));
        }
        break;
      case 1: node.add_input(RandomInput(random, def, index)); break;
      case 2:
        if (node.input_size() > 0) node.mutable_input()->RemoveLast();
        break;
      case 3: node.set_op(random.OneIn(4) ? "Nope" : random.Pick(kOps)); break;
      case 4:
        if (!node.attr().empty()) {
          auto it = node.attr().begin();
          std::advance(it, random.Below(node.attr_size()));
          node.mutable_attr()->erase(it->first);
        }
        break;
      case 5:
      case 6:
        if (!node.attr().empty()) {
          auto it = node.mutable_attr()->begin();
          std::advance(it, random.Below(node.attr_size()));
          it->second = RandomAttrValue(random);
        } else {
          (*node.mutable_attr())["N"] = RandomAttrValue(random);
        }
        break;
      case 7: *def.add_node() = node; break;
      case 8:
        node.set_name(random.Pick<std::string>({"", "_x", "a b", "fresh", def.node(0).name()}));
        break;
      default: def.mutable_node()->SwapElements(index, random.Below(def.node_size())); break;
    }
  }
}

class ImportFuzz : public ::testing::Test {
 protected:
  // Damaged inputs make protobuf log (invalid UTF-8 and the like); the
  // statuses carry what matters.
  void SetUp() override {
    previous_ = google::protobuf::SetLogHandler(
        [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  }
  void TearDown() override { google::protobuf::SetLogHandler(previous_); }

  const std::vector<TestGraph> graphs_ = TestGraphs();

 private:
  google::protobuf::LogHandler* previous_ = nullptr;
};

TEST_F(ImportFuzz, EveryTestGraphImportsUnmodified) {
  ASSERT_EQ(graphs_.size(), 8u);
  Outcomes outcomes;
  for (const TestGraph& graph : graphs_) ParseAndImport(graph.bytes, outcomes);
  EXPECT_EQ(outcomes.imported, 8);
}

TEST_F(ImportFuzz, TruncatedGraphs) {
  Outcomes outcomes;
  for (const TestGraph& graph : graphs_) {
    for (size_t length = 0; length < graph.bytes.size(); ++length) {
      ParseAndImport(std::string_view(graph.bytes).substr(0, length), outcomes);
    }
  }
  EXPECT_GT(outcomes.parse_errors, 0);
  EXPECT_GT(outcomes.import_errors, 0);
}

TEST_F(ImportFuzz, MutatedBytes) {
  Outcomes outcomes;
  Random random(20240601);
  for (const TestGraph& graph : graphs_) {
    for (int i = 0; i < 2000; ++i) {
      std::string bytes = graph.bytes;
      MutateBytes(random, bytes);
      ParseAndImport(bytes, outcomes);
    }
  }
  EXPECT_GT(outcomes.parse_errors, 0);
  EXPECT_GT(outcomes.import_errors, 0);
  EXPECT_GT(outcomes.imported, 0);
}

TEST_F(ImportFuzz, RandomBytesAndText) {
  Outcomes outcomes;
  Random random(7);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes;
    for (int n = random.Below(200); n > 0; --n) bytes += random.Byte();
    ParseAndImport(bytes, outcomes);
  }
  for (int i = 0; i < 1000; ++i) {
    ParseAndImport(RandomPrintable(random, random.Below(200)), outcomes);
  }
  for (int i = 0; i < 2000; ++i) ParseAndImport(RandomTokens(random), outcomes);
  // What got past parsing here were empty graphs (comments, whitespace),
  // which ParseGraphDef now refuses as holding no graph.
  EXPECT_GT(outcomes.parse_errors, 0);
}

TEST_F(ImportFuzz, RandomGraphsOfStandardOps) {
  Outcomes outcomes;
  Random random(1234);
  for (int i = 0; i < 20000; ++i) {
    const GraphDef def = RandomGraph(random);
    if (i % 2 == 0) {
      Import(def, outcomes);
    } else {
      std::string bytes =
          SerializeGraphDef(def, i % 4 == 1 ? GraphFormat::kBinary : GraphFormat::kText);
      MutateBytes(random, bytes);
      ParseAndImport(bytes, outcomes);
    }
  }
  EXPECT_GT(outcomes.import_errors, 0);
  EXPECT_GT(outcomes.imported, 0);
}

TEST_F(ImportFuzz, StructurallyMutatedGraphs) {
  Outcomes outcomes;
  Random random(42);
  for (const TestGraph& graph : graphs_) {
    auto def = ParseGraphDef(graph.bytes, DetectGraphFormat(graph.bytes), graph.name);
    ASSERT_OK(def);
    for (int i = 0; i < 2000; ++i) {
      GraphDef mutant = *def;
      MutateGraph(random, mutant);
      Import(mutant, outcomes);
    }
  }
  EXPECT_GT(outcomes.import_errors, 0);
  EXPECT_GT(outcomes.imported, 0);
}

}  // namespace
}  // namespace rill
