#include "runtime/distributed/slurm_env.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace rill {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '-' || c == '.' ||
         c == '_';
}

// Reads one list left to right; every error names the variable, the whole
// text and the 1-based byte where reading stopped.
class ListReader {
 public:
  ListReader(std::string_view text, std::string_view variable) : text_(text), variable_(variable) {}

  bool done() const { return pos_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[pos_]; }
  size_t pos() const { return pos_; }
  void advance() { ++pos_; }

  absl::Status Error(std::string_view problem, size_t at) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s '%s': %s at byte %d", variable_, text_, problem, at + 1));
  }
  absl::Status Error(std::string_view problem) const { return Error(problem, pos_); }

  // What stands at the current byte, for "expected X, found Y".
  std::string Found() const {
    return done() ? std::string("the end") : absl::StrFormat("'%c'", text_[pos_]);
  }

  // A decimal number and its digits as written (which keep its padding).
  absl::StatusOr<std::pair<int64_t, std::string_view>> Number(std::string_view what) {
    const size_t start = pos_;
    while (!done() && IsDigit(peek())) advance();
    const std::string_view digits = text_.substr(start, pos_ - start);
    if (digits.empty())
      return Error(absl::StrFormat("expected %s, found %s", what, Found()), start);
    // Nine digits keep every value an int with room to spare.
    if (digits.size() > 9) return Error(absl::StrFormat("number '%s' is too long", digits), start);
    int64_t value = 0;
    for (const char c : digits) value = value * 10 + (c - '0');
    return std::pair(value, digits);
  }

 private:
  const std::string_view text_;
  const std::string_view variable_;
  size_t pos_ = 0;
};

// One bracket group after its '[': its numbers, formatted with their
// padding. Leaves the reader after the ']'.
absl::StatusOr<std::vector<std::string>> ReadBracketGroup(ListReader& reader, size_t open) {
  std::vector<std::string> values;
  while (true) {
    if (reader.done()) return reader.Error("unclosed '['", open);
    const size_t start = reader.pos();
    auto low = reader.Number("a number or a range");
    if (!low.ok()) return low.status();
    int64_t high = low->first;
    if (reader.peek() == '-') {
      reader.advance();
      if (reader.done()) return reader.Error("unclosed '['", open);
      auto last = reader.Number("the end of the range");
      if (!last.ok()) return last.status();
      high = last->first;
      if (high < low->first) {
        return reader.Error(
            absl::StrFormat("range '%s-%s' runs backwards", low->second, last->second), start);
      }
    }
    if (static_cast<int64_t>(values.size()) + (high - low->first) >= kMaxSlurmListEntries) {
      return reader.Error(absl::StrFormat("more than %d entries", kMaxSlurmListEntries), start);
    }
    // Slurm pads every number of a range as wide as its first.
    const int width = static_cast<int>(low->second.size());
    for (int64_t v = low->first; v <= high; ++v)
      values.push_back(absl::StrFormat("%0*d", width, v));
    if (reader.peek() == ']') {
      reader.advance();
      return values;
    }
    if (reader.peek() != ',') {
      if (reader.done()) return reader.Error("unclosed '['", open);
      return reader.Error("expected ',' or ']', found " + reader.Found());
    }
    reader.advance();
  }
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandSlurmHostList(std::string_view text,
                                                             std::string_view variable) {
  ListReader reader(text, variable);
  if (text.empty()) return reader.Error("empty host list", 0);
  std::vector<std::string> hosts;
  while (true) {
    // One entry: name runs and bracket groups up to a top-level ','.
    const size_t entry_start = reader.pos();
    std::vector<std::string> expanded = {""};
    while (!reader.done() && reader.peek() != ',') {
      const char c = reader.peek();
      if (c == '[') {
        const size_t open = reader.pos();
        reader.advance();
        auto values = ReadBracketGroup(reader, open);
        if (!values.ok()) return values.status();
        if (expanded.size() * values->size() + hosts.size() > kMaxSlurmListEntries) {
          return reader.Error(absl::StrFormat("more than %d hosts", kMaxSlurmListEntries), open);
        }
        std::vector<std::string> product;
        product.reserve(expanded.size() * values->size());
        for (const std::string& prefix : expanded) {
          for (const std::string& value : *values) product.push_back(prefix + value);
        }
        expanded = std::move(product);
      } else if (c == ']') {
        return reader.Error("unexpected ']'");
      } else if (IsHostChar(c)) {
        for (std::string& host : expanded) host += c;
        reader.advance();
      } else {
        return reader.Error(absl::StrFormat("unexpected character '%c'", c));
      }
    }
    if (reader.pos() == entry_start) return reader.Error("empty host name");
    hosts.insert(hosts.end(), expanded.begin(), expanded.end());
    if (reader.done()) return hosts;
    if (reader.pos() + 1 == text.size()) return reader.Error("trailing ','");
    reader.advance();
  }
}

absl::StatusOr<std::vector<int>> ExpandSlurmTasksPerNode(std::string_view text,
                                                         std::string_view variable) {
  ListReader reader(text, variable);
  if (text.empty()) return reader.Error("empty list", 0);
  std::vector<int> counts;
  while (true) {
    const size_t start = reader.pos();
    auto tasks = reader.Number("a task count");
    if (!tasks.ok()) return tasks.status();
    if (tasks->first < 1) return reader.Error("a node runs no tasks", start);
    int64_t repeat = 1;
    if (reader.peek() == '(') {
      reader.advance();
      if (reader.peek() != 'x')
        return reader.Error("expected 'x' after '(', found " + reader.Found());
      reader.advance();
      const size_t repeat_start = reader.pos();
      auto nodes = reader.Number("a node count");
      if (!nodes.ok()) return nodes.status();
      if (nodes->first < 1) return reader.Error("a repeat of no nodes", repeat_start);
      if (reader.peek() != ')') return reader.Error("expected ')', found " + reader.Found());
      reader.advance();
      repeat = nodes->first;
    }
    if (static_cast<int64_t>(counts.size()) + repeat > kMaxSlurmListEntries) {
      return reader.Error(absl::StrFormat("more than %d nodes", kMaxSlurmListEntries), start);
    }
    counts.insert(counts.end(), repeat, static_cast<int>(tasks->first));
    if (reader.done()) return counts;
    if (reader.peek() != ',') return reader.Error("expected ',' or '(', found " + reader.Found());
    reader.advance();
    if (reader.done()) return reader.Error("expected a task count, found the end");
  }
}

absl::StatusOr<std::vector<std::string>> SplitDeviceList(std::string_view text,
                                                         std::string_view variable) {
  std::vector<std::string> devices;
  if (text.empty()) return devices;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(text.find(',', begin), text.size());
    if (end == begin) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s '%s': empty device at byte %d", variable, text, begin + 1));
    }
    devices.emplace_back(text.substr(begin, end - begin));
    if (end == text.size()) return devices;
    begin = end + 1;
  }
}

std::vector<std::string> GpusOfTask(const std::vector<std::string>& node_gpus, int tasks_on_node,
                                    int local_index) {
  const size_t per_task = node_gpus.size() / static_cast<size_t>(tasks_on_node);
  const size_t first = per_task * static_cast<size_t>(local_index);
  return std::vector<std::string>(node_gpus.begin() + first, node_gpus.begin() + first + per_task);
}

}  // namespace rill
