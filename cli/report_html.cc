#include "cli/report_html.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <vector>

#include "absl/time/time.h"
#include "cli/report_histogram.h"
#include "cli/report_timeline.h"
#include "cli/svg_plot.h"
#include "fmt/core.h"

namespace rill::cli {
namespace {

constexpr char kStyle[] = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 18px; border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 32px; }
nav a { margin-right: 14px; }
.meta, .note { color: #555; }
.plots, .histograms { display: flex; flex-wrap: wrap; gap: 12px; margin: 8px 0; }
svg { background: #fff; border: 1px solid #e3e3e3; border-radius: 4px; }
svg text { font: 11px sans-serif; fill: #333; }
svg .title { font-weight: 600; font-size: 13px; }
svg .subtitle, svg .step { fill: #666; }
svg .stats { font-size: 10px; }
.grid { stroke: #eee; }
.tick { stroke: #999; }
.frame { fill: none; stroke: #bbb; }
.series { stroke-width: 1.6; }
.checkpoint-marker line { stroke: #777; stroke-dasharray: 4 3; }
.checkpoint-marker path { fill: #555; }
.ridge path { fill: #e6eff8; fill-opacity: 0.9; stroke: #1f77b4; stroke-width: 1.2; }
.mean { stroke: #d62728; stroke-dasharray: 3 2; }
.track-bg { fill: #fafafa; }
.track-bg.odd { fill: #f0f3f7; }
.slice rect { stroke: #fff; stroke-width: 0.5; }
svg .slice text { fill: #fff; font-size: 10px; }
svg .process-label { font-weight: 600; font-size: 12px; }
.flow { stroke: #333; stroke-width: 1; fill: none; }
.counter-area { fill-opacity: 0.25; stroke-width: 1.2; }
table { border-collapse: collapse; }
td, th { padding: 3px 12px 3px 0; border-bottom: 1px solid #eee; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.warnings li { color: #a33; }
code { font-size: 12px; }
)";

// What the page draws at most, so that its size stays bounded however
// much the log directory holds; the page says what it left out.
constexpr size_t kMaxPlottedTags = 100;     // Scalar tags, each two plots.
constexpr size_t kMaxSeriesPerPlot = 24;    // Tasks in one plot.
constexpr size_t kMaxHistogramCharts = 60;  // (tag, task) small multiples.
constexpr size_t kMaxListedNames = 1000;    // Names of what was not drawn.
constexpr size_t kMaxNameChars = 160;
constexpr size_t kMaxFileRows = 200;
constexpr size_t kMaxWarnings = 50;
constexpr size_t kMaxOpRows = 15;

// TensorFlow's rate summaries: plotted apart, with their unit, since their
// scale has nothing to do with a loss's.
bool IsRate(const std::string& tag) {
  return tag.find("examples/sec") != std::string::npos ||
         tag.find("global_step/sec") != std::string::npos;
}

std::string Relative(const ReportData& data, const std::string& path) {
  return std::filesystem::path(path).lexically_relative(data.logdir).generic_string();
}

// A name as listed, shortened.
std::string ShortName(const std::string& name) {
  if (name.size() <= kMaxNameChars) return EscapeXml(name);
  return EscapeXml(name.substr(0, kMaxNameChars)) + "\u2026";
}

// The note under a section that drew only some of its items: how many it
// left out and, up to kMaxListedNames, which.
std::string LeftOutNote(const std::string& what, size_t limit,
                        const std::vector<std::string>& names) {
  if (names.empty()) return "";
  std::string html = fmt::format(
      "<div class=\"left-out\"><p class=\"note\">Left out: {} more {} not drawn (the page draws "
      "at most {}).</p>\n<p class=\"left-out-names\">",
      names.size(), what, limit);
  for (size_t i = 0; i < names.size() && i < kMaxListedNames; ++i) {
    html += (i == 0 ? "<code>" : ", <code>") + ShortName(names[i]) + "</code>";
  }
  if (names.size() > kMaxListedNames) {
    html += fmt::format(" and {} more", names.size() - kMaxListedNames);
  }
  return html + "</p></div>\n";
}

// Wall time is shown from the first event on, in the unit that keeps the
// numbers short; the start itself is in the axis label.
struct WallAxis {
  double origin = 0;
  double divisor = 1;
  std::string label;
};

WallAxis MakeWallAxis(const ReportData& data) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const EventFile& file : data.event_files) {
    for (const auto& [tag, points] : file.scalars) {
      for (const ScalarPoint& p : points) {
        lo = std::min(lo, p.wall_time);
        hi = std::max(hi, p.wall_time);
      }
    }
  }
  WallAxis axis;
  if (!(lo <= hi)) return axis;
  axis.origin = lo;
  std::string unit = "s";
  if (hi - lo >= 36000) {
    axis.divisor = 3600;
    unit = "h";
  } else if (hi - lo >= 600) {
    axis.divisor = 60;
    unit = "min";
  }
  axis.label = fmt::format(
      "wall time ({} since {})", unit,
      absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixSeconds(static_cast<int64_t>(lo)),
                       absl::UTCTimeZone()));
  return axis;
}

std::vector<PlotMarker> CheckpointMarkers(const ReportData& data) {
  std::vector<PlotMarker> markers;
  for (const CheckpointRecord& c : data.checkpoints) {
    if (!c.step) continue;
    markers.push_back({static_cast<double>(*c.step),
                       fmt::format("checkpoint at step {}: {}", *c.step, c.path),
                       "checkpoint-marker"});
  }
  return markers;
}

std::string RenderScalarTag(const ReportData& data, const std::string& tag, const WallAxis& wall,
                            const std::vector<PlotMarker>& markers) {
  const bool rate = IsRate(tag);
  std::vector<PlotSeries> by_step, by_time;
  std::vector<std::string> left_out;
  for (const EventFile& file : data.event_files) {
    const auto it = file.scalars.find(tag);
    if (it == file.scalars.end()) continue;
    if (by_step.size() == kMaxSeriesPerPlot) {
      left_out.push_back(file.task);
      continue;
    }
    PlotSeries step_series, time_series;
    size_t not_finite = 0;
    double sum = 0;
    for (const ScalarPoint& p : it->second) {
      if (!std::isfinite(p.value)) {
        ++not_finite;
        continue;
      }
      sum += p.value;
      step_series.points.emplace_back(static_cast<double>(p.step), p.value);
      time_series.points.emplace_back((p.wall_time - wall.origin) / wall.divisor, p.value);
    }
    std::stable_sort(time_series.points.begin(), time_series.points.end());
    std::string name = file.task;
    if (rate && !step_series.points.empty()) {
      name += fmt::format(" (mean {}/s)", FormatValue(sum / step_series.points.size()));
    }
    if (not_finite > 0) name += fmt::format(" ({} NaN/inf not drawn)", not_finite);
    step_series.name = time_series.name = name;
    by_step.push_back(std::move(step_series));
    by_time.push_back(std::move(time_series));
  }
  const std::string y_label = rate ? tag + " (per second)" : tag;
  LinePlotOptions step_plot;
  step_plot.title = tag + (rate ? " (rate)" : "") + " vs step";
  step_plot.x_label = "step";
  step_plot.y_label = y_label;
  step_plot.css_class = "scalar-plot by-step";
  step_plot.markers = markers;
  LinePlotOptions time_plot = step_plot;
  time_plot.title = tag + (rate ? " (rate)" : "") + " vs wall time";
  time_plot.x_label = wall.label;
  time_plot.css_class = "scalar-plot by-wall-time";
  time_plot.markers.clear();
  return fmt::format("<div class=\"plots\" data-tag=\"{}\">{}{}</div>\n{}", EscapeXml(tag),
                     RenderLinePlot(step_plot, by_step), RenderLinePlot(time_plot, by_time),
                     LeftOutNote("tasks of " + tag, kMaxSeriesPerPlot, left_out));
}

std::string RenderScalars(const ReportData& data) {
  std::set<std::string> tags;
  for (const EventFile& file : data.event_files) {
    for (const auto& [tag, points] : file.scalars) tags.insert(tag);
  }
  if (tags.empty()) return "<p class=\"note\">No scalar summaries in the event files.</p>\n";
  const WallAxis wall = MakeWallAxis(data);
  const std::vector<PlotMarker> markers = CheckpointMarkers(data);
  std::string html, rates;
  std::vector<std::string> left_out;
  size_t plotted = 0;
  for (const std::string& tag : tags) {
    if (plotted == kMaxPlottedTags) {
      left_out.push_back(tag);
      continue;
    }
    ++plotted;
    (IsRate(tag) ? rates : html) += RenderScalarTag(data, tag, wall, markers);
  }
  if (!rates.empty()) html += "<h3 id=\"rates\">Rates</h3>\n" + rates;
  int64_t thinned = 0;
  for (const EventFile& file : data.event_files) thinned += file.thinned_points;
  if (thinned > 0) {
    html += fmt::format(
        "<p class=\"note left-out\">Left out: {} scalar points, thinned evenly from series longer "
        "than {} points (a plot draws no more).</p>\n",
        thinned, 2 * kKeptScalarPoints);
  }
  return html + LeftOutNote("scalar tags", kMaxPlottedTags, left_out);
}

std::string RenderFiles(const ReportData& data) {
  std::string html =
      "<table class=\"files\"><tr><th>task</th><th>event file</th><th>events</th><th>steps</th>"
      "</tr>\n";
  for (size_t i = 0; i < data.event_files.size() && i < kMaxFileRows; ++i) {
    const EventFile& file = data.event_files[i];
    int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
    for (const auto& [tag, points] : file.scalars) {
      first = std::min(first, points.front().step);
      last = std::max(last, points.back().step);
    }
    html += fmt::format(
        "<tr><td>{}</td><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "</tr>\n",
        EscapeXml(file.task), EscapeXml(Relative(data, file.path)), file.events,
        first <= last ? fmt::format("{}\u2013{}", first, last) : std::string("\u2013"));
  }
  html += "</table>\n";
  if (data.event_files.size() > kMaxFileRows) {
    html += fmt::format("<p class=\"note\">Left out of this table: {} more event files.</p>\n",
                        data.event_files.size() - kMaxFileRows);
  }
  return html;
}

std::string RenderCheckpoints(const ReportData& data) {
  if (data.checkpoints.empty()) {
    return "<p class=\"note\">No checkpoint state file and no checkpoint events.</p>\n";
  }
  std::string html =
      "<table class=\"checkpoints\"><tr><th>step</th><th>path</th><th>known from</th></tr>\n";
  for (const CheckpointRecord& c : data.checkpoints) {
    std::string sources;
    for (const std::string& source : c.sources) {
      sources += (sources.empty() ? "" : ", ") + EscapeXml(source);
    }
    html += fmt::format(
        "<tr class=\"checkpoint\"><td class=\"num\">{}</td><td><code>{}</code></td><td>{}</td>"
        "</tr>\n",
        c.step ? std::to_string(*c.step) : "?", EscapeXml(c.path), sources);
  }
  return html + "</table>\n";
}

std::string RenderHistograms(const ReportData& data) {
  std::set<std::string> tags;
  for (const EventFile& file : data.event_files) {
    for (const auto& [tag, points] : file.histograms) tags.insert(tag);
  }
  if (tags.empty()) return "<p class=\"note\">No histogram summaries in the event files.</p>\n";
  std::string html = fmt::format(
      "<p class=\"note\">The latest {} steps of each series, oldest at the back; the dashed line "
      "is the latest mean.</p>\n<div class=\"histograms\">\n",
      kKeptHistogramSteps);
  std::vector<std::string> left_out;
  size_t charts = 0;
  for (const std::string& tag : tags) {
    for (const EventFile& file : data.event_files) {
      const auto it = file.histograms.find(tag);
      if (it == file.histograms.end()) continue;
      if (charts == kMaxHistogramCharts) {
        left_out.push_back(tag + " (" + file.task + ")");
        continue;
      }
      ++charts;
      html += RenderHistogramChart(tag, file.task, it->second);
    }
  }
  return html + "</div>\n" + LeftOutNote("histogram series", kMaxHistogramCharts, left_out);
}

// What the trace's limits left out of the timeline, one sentence each.
std::string TraceLeftOut(const Trace& trace) {
  std::vector<std::string> parts;
  const int64_t slices = static_cast<int64_t>(trace.slices.size());
  if (trace.total_slices > slices) {
    parts.push_back(
        fmt::format("the {} longest of {} slices are drawn, {} shorter ones are not "
                    "(the table of ops below counts them all)",
                    slices, trace.total_slices, trace.total_slices - slices));
  }
  if (trace.omitted_flows > 0) {
    parts.push_back(fmt::format("{} flows past the first {} are not drawn", trace.omitted_flows,
                                trace.flows.size()));
  }
  if (trace.thinned_points > 0) {
    parts.push_back(
        fmt::format("counters are thinned evenly: {} samples are not drawn", trace.thinned_points));
  }
  if (trace.omitted_counters > 0) {
    parts.push_back(
        fmt::format("{} samples of counters (or counter arguments) past the first "
                    "ones are not drawn",
                    trace.omitted_counters));
  }
  if (trace.omitted_metadata > 0) {
    parts.push_back(fmt::format("{} process or thread names and sort indexes are not read",
                                trace.omitted_metadata));
  }
  if (trace.overflowed_events > 0) {
    parts.push_back(
        fmt::format("{} begin and flow events found no room to wait for their other "
                    "end and are not drawn",
                    trace.overflowed_events));
  }
  if (parts.empty()) return "";
  std::string html = "<p class=\"note left-out\">Left out of this timeline of " +
                     std::to_string(trace.events) + " events: ";
  for (size_t i = 0; i < parts.size(); ++i) html += (i == 0 ? "" : "; ") + EscapeXml(parts[i]);
  return html + ".</p>\n";
}

// Where the step's time went, over every slice of the trace, drawn or not.
std::string RenderOpTotals(const Trace& trace) {
  if (trace.op_totals.empty()) return "";
  std::string html =
      "<table class=\"ops\"><tr><th>slice name</th><th>count</th><th>total</th><th>longest</th>"
      "</tr>\n";
  for (size_t i = 0; i < trace.op_totals.size() && i < kMaxOpRows; ++i) {
    const TraceOpTotal& op = trace.op_totals[i];
    html += fmt::format(
        "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{} \u00b5s</td>"
        "<td class=\"num\">{} \u00b5s</td></tr>\n",
        ShortName(op.name), op.count, FormatValue(op.total_dur), FormatValue(op.max_dur));
  }
  html += "</table>\n";
  if (trace.op_totals.size() > kMaxOpRows) {
    html += fmt::format("<p class=\"note\">The {} costliest of {} slice names.</p>\n", kMaxOpRows,
                        trace.op_totals.size());
  }
  return html;
}

std::string RenderTraceSection(const ReportData& data) {
  if (!data.trace) {
    return data.trace_files == 0
               ? "<p class=\"note\">No trace file (*.trace.json) under the log directory.</p>\n"
               : "<p class=\"note\">No trace file could be read (see the warnings).</p>\n";
  }
  std::string html = fmt::format(
      "<p class=\"meta\">From <code>{}</code>{}{}.</p>\n",
      EscapeXml(Relative(data, data.trace_path)),
      data.trace_files > 1 ? fmt::format(", the newest of {} trace files", data.trace_files)
                           : std::string(),
      data.trace->skipped_events > 0
          ? fmt::format("; {} malformed or unpaired events not drawn", data.trace->skipped_events)
          : std::string());
  return html + TraceLeftOut(*data.trace) + RenderTimeline(*data.trace) + "\n" +
         RenderOpTotals(*data.trace);
}

}  // namespace

std::string RenderReportHtml(const ReportData& data) {
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>rill report: {0}</title>\n<style>{1}</style>\n</head>\n<body>\n"
      "<h1>Training report</h1>\n<p class=\"meta\">Log directory <code>{0}</code>: {2} event "
      "file{3}, {4} checkpoint{5}, {6}.</p>\n"
      "<nav><a href=\"#scalars\">Scalars</a><a href=\"#checkpoints\">Checkpoints</a>"
      "<a href=\"#histograms\">Histograms</a><a href=\"#timeline\">Timeline</a></nav>\n",
      EscapeXml(data.logdir), kStyle, data.event_files.size(),
      data.event_files.size() == 1 ? "" : "s", data.checkpoints.size(),
      data.checkpoints.size() == 1 ? "" : "s", data.trace ? "a trace" : "no trace");
  if (!data.warnings.empty()) {
    html += "<h2 id=\"warnings\">Warnings</h2>\n<ul class=\"warnings\">\n";
    for (size_t i = 0; i < data.warnings.size() && i < kMaxWarnings; ++i) {
      html += "<li>" + EscapeXml(data.warnings[i]) + "</li>\n";
    }
    html += "</ul>\n";
    if (data.warnings.size() > kMaxWarnings) {
      html += fmt::format(
          "<p class=\"note\">Left out: {} more warnings (all are printed on stderr).</p>\n",
          data.warnings.size() - kMaxWarnings);
    }
  }
  if (!data.event_files.empty()) html += RenderFiles(data);
  html += "<h2 id=\"scalars\">Scalars</h2>\n" + RenderScalars(data);
  html += "<h2 id=\"checkpoints\">Checkpoints</h2>\n" + RenderCheckpoints(data);
  html += "<h2 id=\"histograms\">Histograms</h2>\n" + RenderHistograms(data);
  html += "<h2 id=\"timeline\">Timeline of a traced step</h2>\n" + RenderTraceSection(data);
  return html + "</body>\n</html>\n";
}

}  // namespace rill::cli
