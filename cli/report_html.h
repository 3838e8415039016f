// Renders what ReadLogdir found as one self-contained HTML page: inline CSS
// and SVG only, nothing fetched, so that it opens offline and travels as one file.
#ifndef RILL_CLI_REPORT_HTML_H_
#define RILL_CLI_REPORT_HTML_H_

#include <string>

#include "cli/report_data.h"

namespace rill::cli {

// The page: the files read and any warnings; per scalar tag a plot against
// step (checkpoints marked) and one against wall time, rates apart; the
// checkpoints; a small multiple per histogram series; the trace's timeline.
// The same data gives the same page, byte for byte.
std::string RenderReportHtml(const ReportData& data);

}  // namespace rill::cli

#endif  // RILL_CLI_REPORT_HTML_H_
