// Draws a parsed Chrome trace as SVG: a row per (process, thread) with a
// bar per slice, arrows for flows, and a small chart per counter.
#ifndef RILL_CLI_REPORT_TIMELINE_H_
#define RILL_CLI_REPORT_TIMELINE_H_

#include <string>

#include "cli/report_trace.h"

namespace rill::cli {

// An <svg class="timeline"> (rows grouped by process, nested slices in
// lanes below their parent, the time axis relative to the first event),
// followed by one <svg class="counter-chart"> per counter on the same
// time axis; or a note when the trace holds nothing to draw. Past 200
// threads the rest are left out, and a note before the SVG says so.
std::string RenderTimeline(const Trace& trace);

}  // namespace rill::cli

#endif  // RILL_CLI_REPORT_TIMELINE_H_
