// `rill report LOGDIR [--out FILE.html]`: one self-contained HTML page of
// what training left in LOGDIR: scalar plots, checkpoints, histograms and
// the timeline of a traced step.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/report_data.h"
#include "cli/report_html.h"
#include "fmt/core.h"
#include "io/posix_file.h"

namespace rill::cli {
namespace {

constexpr char kUsage[] =
    "usage: rill report LOGDIR [--out FILE.html] [--quiet]\n"
    "  LOGDIR: a training run's log directory, read recursively: the event files of every\n"
    "  task (*tfevents*), checkpoint states ('checkpoint') and the newest *.trace.json\n"
    "  --out: where to write the page (default LOGDIR/report.html); it needs nothing else to\n"
    "  open: plots are inline SVG\n"
    "  --quiet: no progress line on stderr while the event files are read\n"
    "  A file that cannot be read is skipped with a warning; the command fails only when\n"
    "  nothing can be. A trace nested deeper than 64 levels is skipped so. Traces are read\n"
    "  as a stream; of a big trace the page draws the longest slices, of many tags the\n"
    "  first 100, and it says what it left out.\n";

int Fail(const std::string& reason) {
  fmt::print(stderr, "rill report: {}\n", OneLine(reason));
  return 1;
}

}  // namespace

int RunReportCommand(const std::vector<std::string>& args) {
  const absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, {"out"}, {"quiet"});
  if (parsed.ok() && parsed->help) return PrintHelp(kUsage);
  if (!parsed.ok()) return PrintUsageError("rill report", parsed.status(), kUsage);
  if (parsed->positional.size() != 1) {
    return PrintUsageError(
        "rill report",
        absl::InvalidArgumentError(parsed->positional.empty()
                                       ? "missing LOGDIR"
                                       : "expected one LOGDIR, got " +
                                             std::to_string(parsed->positional.size())),
        kUsage);
  }
  const std::string& logdir = parsed->positional[0];
  const std::optional<std::string> out_flag = parsed->Value("out");
  if (out_flag && out_flag->empty()) {
    return PrintUsageError("rill report", absl::InvalidArgumentError("--out is empty"), kUsage);
  }

  const std::string out =
      out_flag ? *out_flag : (std::filesystem::path(logdir) / "report.html").string();
  // Refused before the log directory is read, which may take a while.
  if (const absl::Status bad = io::CheckOutputPath(out); !bad.ok()) {
    return Fail(fmt::format("--out: {}", std::string(bad.message())));
  }
  absl::StatusOr<ReportData> data = ReadLogdir(logdir, /*progress=*/!parsed->Has("quiet"));
  if (!data.ok()) return Fail(std::string(data.status().message()));
  for (const std::string& warning : data->warnings) {
    fmt::print(stderr, "rill report: warning: {}\n", OneLine(warning));
  }
  if (const absl::Status written = io::WriteFileAtomically(out, RenderReportHtml(*data));
      !written.ok()) {
    return Fail(fmt::format("cannot write '{}': {}", out, std::string(written.message())));
  }
  std::fflush(stderr);
  fmt::print("report: {}\n", out);
  return 0;
}

}  // namespace rill::cli
