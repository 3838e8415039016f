#include "graph/graph_io.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_format.h"
#include "google/protobuf/unknown_field_set.h"
#include "google/protobuf/util/message_differencer.h"
#include "graph/node_def_util.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::rill::testing::MakeTempDir;
using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Two nodes with attrs, a version and a function, so that every part of a
// GraphDef goes through the round trips.
GraphDef SampleGraph() {
  GraphDef graph;
  NodeDef* a = graph.add_node();
  a->set_name("a");
  a->set_op("Const");
  a->set_device("/job:ps/task:0");
  TensorProto value;
  value.set_dtype(DT_FLOAT);
  value.mutable_tensor_shape()->add_dim()->set_size(3);
  value.set_tensor_content(std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40", 12));
  (*a->mutable_attr())["value"] = MakeAttr(value);
  (*a->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
  NodeDef* b = graph.add_node();
  b->set_name("b/Add");
  b->set_op("Add");
  b->add_input("a");
  b->add_input("a:0");
  b->add_input("^init");
  (*b->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  (*b->mutable_attr())["_class"] = MakeAttr(std::vector<std::string>{"loc:@a"});
  graph.mutable_versions()->set_producer(27);
  graph.mutable_library()->add_function()->mutable_signature()->set_name("f");
  return graph;
}

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = MakeTempDir() + "/" + name;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  EXPECT_NE(file, nullptr) << path;
  if (file == nullptr) return path;
  EXPECT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
  std::fclose(file);
  return path;
}

TEST(GraphIo, DetectsTextAndBinary) {
  EXPECT_EQ(DetectGraphFormat("node {\n\tname: \"a\"\r\n}\n"), GraphFormat::kText);
  EXPECT_EQ(DetectGraphFormat("node { name: \"caf\xc3\xa9\" }"), GraphFormat::kText);
  EXPECT_EQ(DetectGraphFormat(SampleGraph().SerializeAsString()), GraphFormat::kBinary);
  EXPECT_EQ(DetectGraphFormat(std::string("node {\0}", 8)), GraphFormat::kBinary);
  EXPECT_EQ(DetectGraphFormat("node {\x7f}"), GraphFormat::kBinary);
  EXPECT_EQ(DetectGraphFormat("node {\x0b}"), GraphFormat::kBinary);
  EXPECT_EQ(DetectGraphFormat("node {\x1f}"), GraphFormat::kBinary);
}

TEST(GraphIo, FormatFollowsTheExtension) {
  EXPECT_EQ(FormatForPath("model.pbtxt"), GraphFormat::kText);
  EXPECT_EQ(FormatForPath("dir.pb/model.txt"), GraphFormat::kText);
  EXPECT_EQ(FormatForPath("model.pb"), GraphFormat::kBinary);
  EXPECT_EQ(FormatForPath("model"), GraphFormat::kBinary);
}

TEST(GraphIo, ParsesBinary) {
  const GraphDef graph = SampleGraph();
  ASSERT_OK_AND_ASSIGN(GraphDef parsed,
                       ParseGraphDef(graph.SerializeAsString(), GraphFormat::kBinary, "model.pb"));
  EXPECT_TRUE(MessageDifferencer::Equals(parsed, graph));
}

TEST(GraphIo, ParsesTextWithComments) {
  const std::string text =
      "# A graph of one node.\n"
      "node {\n"
      "  name: \"a\"  # the only one\n"
      "  op: \"NoOp\"\n"
      "  input: \"^b\"\n"
      "}\n"
      "versions { producer: 15 }  # trailing\n";
  ASSERT_OK_AND_ASSIGN(GraphDef parsed, ParseGraphDef(text, GraphFormat::kText, "model.pbtxt"));
  ASSERT_EQ(parsed.node_size(), 1);
  EXPECT_EQ(parsed.node(0).name(), "a");
  EXPECT_EQ(parsed.node(0).op(), "NoOp");
  EXPECT_EQ(parsed.node(0).input(0), "^b");
  EXPECT_EQ(parsed.versions().producer(), 15);
}

TEST(GraphIo, TextErrorsGiveLineAndColumn) {
  EXPECT_THAT(
      ParseGraphDef("node {\n  name: \"a\"\n}\n}\n", GraphFormat::kText, "model.pbtxt"),
      StatusIs(absl::StatusCode::kInvalidArgument, "model.pbtxt:4:1: Expected identifier, got: }"));
  EXPECT_THAT(
      ParseGraphDef("node {\n  name: \"a\"\n  colour: 1\n}\n", GraphFormat::kText, "model.pbtxt"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "model.pbtxt:3:9: Message type \"tensorflow.NodeDef\" has no field named "
               "\"colour\"."));
  // Types are named as TensorFlow names them, nested ones too.
  EXPECT_THAT(ParseGraphDef("node {\n  attr { key: \"T\" valu { type: DT_FLOAT } }\n}\n",
                            GraphFormat::kText, "model.pbtxt"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "model.pbtxt:2:24: Message type \"tensorflow.NodeDef.AttrEntry\" has no "
                       "field named \"valu\"."));
}

TEST(GraphIo, BinaryErrorsGiveTheByteOffsetAndNode) {
  // Node #0 holds a name, an op and an attr entry (field 5) whose length
  // runs past the end of the node.
  const std::string bytes = std::string("\x0a\x10", 2) +
                            "\x0a\x01"
                            "a" +
                            "\x12\x05"
                            "Const" +
                            std::string("\x2a\xc8\x01", 3) + "xyz";
  EXPECT_THAT(ParseGraphDef(bytes, GraphFormat::kBinary, "model.pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "model.pb: malformed binary GraphDef at byte offset 12 (inside node #0 "
                       "'a'): length-delimited field 5 needs 200 bytes but 3 remain"));
}

TEST(GraphIo, TruncatedBinaryNamesTheCutNode) {
  const std::string bytes = SampleGraph().SerializeAsString();
  const size_t second_node = bytes.find(std::string("\x0a\x05"
                                                    "b/Add",
                                                    7)) -
                             2;
  ASSERT_EQ(bytes[second_node], '\x0a');
  const std::string cut = bytes.substr(0, second_node + 6);
  EXPECT_THAT(ParseGraphDef(cut, GraphFormat::kBinary, "model.pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith(absl::StrFormat("model.pb: malformed binary GraphDef at "
                                                        "byte offset %d (inside node #1): ",
                                                        second_node)),
                             HasSubstr("length-delimited field 1 needs"))));
}

TEST(GraphIo, DescribesWireFormatDamage) {
  const struct {
    std::string bytes;
    std::string message;
  } cases[] = {
      {"\x0a", "at byte offset 1 (inside node #0): truncated varint"},
      {"\x0f\x01", "at byte offset 0: invalid wire type 7 (field 1)"},
      {std::string("\x0a\x02\x0a\xff", 4), "at byte offset 3 (inside node #0): truncated varint"},
      {std::string("\x0a\x03\x0a\x01\xff", 5),
       "at byte offset 2 (inside node #0): string field 1 ('name') is not valid UTF-8"},
      {"\x29\x01\x02", "at byte offset 0: fixed64 field 5 needs 8 bytes but 2 remain"},
      {"\x24", "at byte offset 0: unexpected end-group tag of field 4"},
      {std::string("\x00\x01", 2), "at byte offset 0: invalid field number 0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.message);
    EXPECT_THAT(ParseGraphDef(c.bytes, GraphFormat::kBinary, "m.pb"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "m.pb: malformed binary GraphDef " + c.message));
  }
}

TEST(GraphIo, RejectsNestingTooDeepInEitherFormat) {
  GraphDef graph;
  NodeDef* node = graph.add_node();
  node->set_name("n");
  AttrValue* value = &(*node->mutable_attr())["x"];
  for (int i = 0; i < 200; ++i) value = &(*value->mutable_func()->mutable_attr())["a"];
  EXPECT_THAT(ParseGraphDef(SerializeGraphDef(graph, GraphFormat::kBinary), GraphFormat::kBinary,
                            "deep.pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("deep.pb: malformed binary GraphDef at byte offset "),
                             HasSubstr("(inside node #0 'n'): nesting deeper than 100 levels"))));
  EXPECT_THAT(
      ParseGraphDef(SerializeGraphDef(graph, GraphFormat::kText), GraphFormat::kText, "deep.pbtxt"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(StartsWith("deep.pbtxt:"), HasSubstr("recursion limit"))));
}

TEST(GraphIo, RejectsUnknownTopLevelFields) {
  EXPECT_THAT(ParseGraphDef("\x50\x01", GraphFormat::kBinary, "model.pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "model.pb: not a GraphDef: unknown field number 10 at top level (byte "
                       "offset 0)"));
  const std::string graph = SampleGraph().SerializeAsString();
  EXPECT_THAT(ParseGraphDef(graph + "\x08\x01", GraphFormat::kBinary, "model.pb"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       absl::StrFormat("model.pb: not a GraphDef: field 1 ('node') with wire "
                                       "type varint, expected length-delimited at top level "
                                       "(byte offset %d)",
                                       graph.size())));
}

TEST(GraphIo, ToleratesTensorFlowDebugInfo) {
  const GraphDef graph = SampleGraph();
  ASSERT_OK_AND_ASSIGN(GraphDef parsed,
                       ParseGraphDef(graph.SerializeAsString() + std::string("\x2a\x02\x0a\x00", 4),
                                     GraphFormat::kBinary, "model.pb"));
  EXPECT_EQ(parsed.node_size(), 2);
}

TEST(GraphIo, RejectsEmptyInput) {
  EXPECT_THAT(ParseGraphDef("", GraphFormat::kBinary, "model.pb"),
              StatusIs(absl::StatusCode::kInvalidArgument, "model.pb: file is empty"));
  const std::string path = WriteFile("empty.pbtxt", "");
  EXPECT_THAT(ReadGraphDef(path),
              StatusIs(absl::StatusCode::kInvalidArgument, path + ": file is empty"));
}

// Found by the graph_def fuzz target: "\n" parsed as an empty graph, whose
// binary form (an empty file) was then refused.
TEST(GraphIo, RejectsInputThatHoldsNoGraph) {
  for (const std::string text : {"\n", "  # only a comment\n", "library {}", "versions {}"}) {
    EXPECT_THAT(ParseGraphDef(text, GraphFormat::kText, "model.pbtxt"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "model.pbtxt: holds no graph (no nodes, versions or library)"))
        << text;
  }
  // An empty library, and one of only an unknown field (6: 3).
  for (const std::string& binary :
       {std::string("\x12\x00", 2), std::string("\x12\x02\x30\x03", 4)}) {
    EXPECT_THAT(ParseGraphDef(binary, GraphFormat::kBinary, "model.pb"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no graph")));
  }
  // A graph of versions alone is one, and reads back from either form.
  GraphDef versions_only;
  versions_only.mutable_versions()->set_producer(27);
  for (const GraphFormat format : {GraphFormat::kBinary, GraphFormat::kText}) {
    ASSERT_OK_AND_ASSIGN(const GraphDef parsed,
                         ParseGraphDef(SerializeGraphDef(versions_only, format), format, "g"));
    EXPECT_EQ(parsed.versions().producer(), 27);
  }
}

// Found by the graph_def fuzz target: an unknown field inside a node's
// attr printed as "1: 4294967296", which the text parser refused.
TEST(GraphIo, TextLeavesOutUnknownFieldsSoThatItReadsBack) {
  GraphDef graph = SampleGraph();
  // Field 1 of TensorShapeProto is unused: an unknown varint there.
  TensorProto* value = (*graph.mutable_node(0)->mutable_attr())["value"].mutable_tensor();
  value->mutable_tensor_shape()
      ->GetReflection()
      ->MutableUnknownFields(value->mutable_tensor_shape())
      ->AddVarint(1, 4294967296);
  ASSERT_OK_AND_ASSIGN(const GraphDef binary,
                       ParseGraphDef(SerializeGraphDef(graph, GraphFormat::kBinary),
                                     GraphFormat::kBinary, "model.pb"));
  const std::string text = SerializeGraphDef(binary, GraphFormat::kText);
  EXPECT_THAT(text, Not(HasSubstr("4294967296")));
  ASSERT_OK_AND_ASSIGN(const GraphDef parsed,
                       ParseGraphDef(text, GraphFormat::kText, "model.pbtxt"));
  EXPECT_EQ(parsed.node_size(), graph.node_size());
  EXPECT_EQ(parsed.node(0).attr().at("value").tensor().tensor_shape().dim_size(), 1);
}

// Found by the graph_def fuzz target: text took a device name that is
// not UTF-8, whose binary form then failed to parse.
TEST(GraphIo, TextStringsMustBeUtf8AsInBinary) {
  for (const std::string& device : {std::string("/job:a/tas\xff\xff"), std::string("\\377")}) {
    const std::string text =
        "node { name: \"a\" op: \"NoOp\" }\n"
        "node { name: \"b\" op: \"NoOp\" device: \"" +
        device + "\" }\n";
    EXPECT_THAT(ParseGraphDef(text, GraphFormat::kText, "model.pbtxt"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "model.pbtxt: string field 'node[1].device' is not valid UTF-8"))
        << device;
  }
  // Attr map keys and values too; bytes fields (tensor strings) take anything.
  EXPECT_THAT(ParseGraphDef("node { name: \"a\" op: \"NoOp\" attr { key: \"\\377\" } }",
                            GraphFormat::kText, "m"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'node[0].attr[0].key'")));
  EXPECT_OK(
      ParseGraphDef("node { name: \"a\" op: \"Const\" attr { key: \"value\" value { "
                    "tensor { dtype: DT_STRING string_val: \"\\377\" } } } }",
                    GraphFormat::kText, "m"));
}

TEST(GraphIo, MissingFileIsNotFound) {
  const std::string path = MakeTempDir() + "/absent.pb";
  EXPECT_THAT(ReadGraphDef(path),
              StatusIs(absl::StatusCode::kNotFound,
                       "cannot open '" + path + "': No such file or directory"));
}

TEST(GraphIo, ReadingADirectoryFails) {
  EXPECT_THAT(ReadGraphDef(MakeTempDir()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Is a directory")));
}

TEST(GraphIo, ReadDetectsTheFormatOfTheBytes) {
  const GraphDef graph = SampleGraph();
  // The extension says text; the bytes say binary.
  const std::string path = WriteFile("mislabelled.pbtxt", graph.SerializeAsString());
  ASSERT_OK_AND_ASSIGN(GraphDef parsed, ReadGraphDef(path));
  EXPECT_TRUE(MessageDifferencer::Equals(parsed, graph));
}

TEST(GraphIo, WriteThenReadRoundTripsInBothFormats) {
  const GraphDef graph = SampleGraph();
  const std::string dir = MakeTempDir();
  for (const GraphFormat format : {GraphFormat::kBinary, GraphFormat::kText}) {
    const std::string path = dir + (format == GraphFormat::kText ? "/g.pbtxt" : "/g.pb");
    ASSERT_OK(WriteGraphDef(graph, path, format));
    ASSERT_OK_AND_ASSIGN(GraphDef parsed, ReadGraphDef(path));
    EXPECT_TRUE(MessageDifferencer::Equals(parsed, graph)) << parsed.DebugString();
    EXPECT_EQ(SerializeGraphDef(parsed, format), SerializeGraphDef(graph, format));
  }
  EXPECT_THAT(SerializeGraphDef(graph, GraphFormat::kText), HasSubstr("name: \"b/Add\""));
}

TEST(GraphIo, WriteToAMissingDirectoryFails) {
  EXPECT_THAT(WriteGraphDef(SampleGraph(), MakeTempDir() + "/no/such/g.pb", GraphFormat::kBinary),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("No such file or directory")));
}

TEST(GraphIo, BinarySerializationIsDeterministic) {
  GraphDef graph = SampleGraph();
  NodeDef* node = graph.mutable_node(1);
  for (const char* key : {"zeta", "alpha", "mu", "beta", "omega", "kappa"}) {
    (*node->mutable_attr())[key] = MakeAttr(key);
  }
  GraphDef copy;
  // Reinserting in another order may change the map's iteration order.
  *copy.mutable_node() = graph.node();
  copy.mutable_node(1)->mutable_attr()->clear();
  for (const char* key : {"omega", "T", "kappa", "_class", "beta", "zeta", "mu", "alpha"}) {
    (*copy.mutable_node(1)->mutable_attr())[key] = graph.node(1).attr().at(key);
  }
  *copy.mutable_versions() = graph.versions();
  *copy.mutable_library() = graph.library();
  EXPECT_EQ(SerializeGraphDef(copy, GraphFormat::kBinary),
            SerializeGraphDef(graph, GraphFormat::kBinary));
}

TEST(GraphIo, ParsesGraphsLargerThan64MiB) {
  constexpr size_t kContentBytes = 70u << 20;
  std::string bytes;
  {
    GraphDef graph;
    NodeDef* node = graph.add_node();
    node->set_name("big");
    node->set_op("Const");
    TensorProto value;
    value.set_dtype(DT_UINT8);
    value.mutable_tensor_shape()->add_dim()->set_size(kContentBytes);
    value.mutable_tensor_content()->assign(kContentBytes, '\x5a');
    *(*node->mutable_attr())["value"].mutable_tensor() = std::move(value);
    bytes = SerializeGraphDef(graph, GraphFormat::kBinary);
  }
  ASSERT_GT(bytes.size(), kContentBytes);
  ASSERT_OK_AND_ASSIGN(GraphDef parsed, ParseGraphDef(bytes, GraphFormat::kBinary, "big.pb"));
  bytes.clear();
  bytes.shrink_to_fit();
  ASSERT_EQ(parsed.node_size(), 1);
  const std::string& content = parsed.node(0).attr().at("value").tensor().tensor_content();
  EXPECT_EQ(content.size(), kContentBytes);
  EXPECT_EQ(content.back(), '\x5a');
}

}  // namespace
}  // namespace rill
