#include "cli/report_timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "cli/svg_plot.h"
#include "fmt/core.h"

namespace rill::cli {
namespace {

constexpr double kWidth = 1180, kPlotLeft = 230, kPlotRight = 1160;
constexpr double kLane = 16, kRowGap = 6, kProcessHeader = 20;
constexpr double kCounterHeight = 64;
// Deeper nesting is drawn in the last lane: a row should not grow without
// bound because one tracer nests deeply.
constexpr int kMaxLanes = 8;
// Rows past this are not drawn (the page says how many): the timeline
// should not grow without bound because a trace has many threads.
constexpr size_t kMaxRows = 200;
constexpr double kCharWidth = 6.2;

using Track = std::pair<TraceId, TraceId>;

// The time axis: microseconds from the first event, shown in the unit that
// keeps the numbers short.
struct TimeAxis {
  double origin = 0;   // Microseconds, as in the file.
  double divisor = 1;  // Microseconds per unit.
  // Not a std::string: assigning one a literal here trips GCC 12's -Wrestrict.
  const char* unit = "\u00b5s";
  LinearScale scale{0, 1, kPlotLeft, kPlotRight};

  double X(double ts) const { return scale((ts - origin) / divisor); }
};

TimeAxis MakeTimeAxis(const Trace& trace) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  const auto cover = [&](double from, double to) {
    lo = std::min(lo, from);
    hi = std::max(hi, to);
  };
  for (const TraceSlice& s : trace.slices) cover(s.ts, s.ts + s.dur);
  for (const TraceFlow& f : trace.flows) {
    cover(std::min(f.from_ts, f.to_ts), std::max(f.from_ts, f.to_ts));
  }
  for (const TraceCounter& c : trace.counters) {
    for (const auto& [arg, points] : c.series) cover(points.front().first, points.back().first);
  }
  TimeAxis axis;
  if (!(lo <= hi)) return axis;
  const double span = hi - lo;
  axis.origin = lo;
  if (span >= 2e6) {
    axis.divisor = 1e6;
    axis.unit = "s";
  } else if (span >= 2e3) {
    axis.divisor = 1e3;
    axis.unit = "ms";
  }
  axis.scale = LinearScale(0, span / axis.divisor, kPlotLeft, kPlotRight);
  return axis;
}

std::string Duration(double micros) {
  if (micros < 1e3) return FormatValue(micros) + " \u00b5s";
  if (micros < 1e6) return FormatValue(micros / 1e3) + " ms";
  return FormatValue(micros / 1e6) + " s";
}

std::string Truncated(const std::string& text, double width) {
  const size_t fits = width > 0 ? static_cast<size_t>(width / kCharWidth) : 0;
  if (text.size() <= fits) return text;
  if (fits < 3) return "";
  return text.substr(0, fits - 1) + "\u2026";
}

std::string ProcessLabel(const Trace& trace, const TraceId& pid) {
  const auto it = trace.process_names.find(pid);
  return it != trace.process_names.end() && !it->second.empty() ? it->second : "pid " + pid;
}

std::string ThreadLabel(const Trace& trace, const Track& track) {
  const auto it = trace.thread_names.find(track);
  return it != trace.thread_names.end() && !it->second.empty() ? it->second : "tid " + track.second;
}

// Chrome's order: by sort index (0 when unset), then by id.
template <typename Key>
bool SortsBefore(const std::map<Key, double>& index, const Key& a, const Key& b,
                 const TraceId& a_id, const TraceId& b_id) {
  const auto of = [&](const Key& k) {
    const auto it = index.find(k);
    return it == index.end() ? 0.0 : it->second;
  };
  if (of(a) != of(b)) return of(a) < of(b);
  return TraceIdLess(a_id, b_id);
}

struct Row {
  Track track;
  std::vector<std::pair<const TraceSlice*, int>> slices;  // With their lane.
  int lanes = 1;
  double y = 0;
};

std::vector<Row> MakeRows(const Trace& trace) {
  std::map<Track, Row> rows;
  for (const TraceFlow& f : trace.flows) {
    rows[{f.from_pid, f.from_tid}].track = {f.from_pid, f.from_tid};
    rows[{f.to_pid, f.to_tid}].track = {f.to_pid, f.to_tid};
  }
  std::map<Track, std::vector<double>> open_ends;  // Per row, the ends of enclosing slices.
  for (const TraceSlice& s : trace.slices) {
    const Track track{s.pid, s.tid};
    Row& row = rows[track];
    row.track = track;
    std::vector<double>& ends = open_ends[track];
    while (!ends.empty() && ends.back() <= s.ts) ends.pop_back();
    const int lane = std::min(static_cast<int>(ends.size()), kMaxLanes - 1);
    ends.push_back(s.ts + s.dur);
    row.slices.emplace_back(&s, lane);
    row.lanes = std::max(row.lanes, lane + 1);
  }
  std::vector<Row> ordered;
  for (auto& [track, row] : rows) ordered.push_back(std::move(row));
  std::stable_sort(ordered.begin(), ordered.end(), [&](const Row& a, const Row& b) {
    const TraceId &pa = a.track.first, &pb = b.track.first;
    if (pa != pb) return SortsBefore(trace.process_sort_index, pa, pb, pa, pb);
    return SortsBefore(trace.thread_sort_index, a.track, b.track, a.track.second, b.track.second);
  });
  return ordered;
}

std::string RenderSlice(const TraceSlice& s, int lane, double row_y, const TimeAxis& axis) {
  const double x0 = axis.X(s.ts), x1 = axis.X(s.ts + s.dur);
  const double width = std::max(x1 - x0, 0.8);
  const double y = row_y + lane * kLane + 1;
  std::string tooltip = s.name;
  if (!s.cat.empty()) tooltip += " (" + s.cat + ")";
  tooltip += fmt::format("\nstart +{}, duration {}", Duration(s.ts - axis.origin), Duration(s.dur));
  if (!s.args.empty()) tooltip += "\n" + s.args;
  std::string svg = fmt::format(
      "<g class=\"slice\"><title>{}</title><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
      "fill=\"{}\"/>",
      EscapeXml(tooltip), Px(x0), Px(y), Px(width), Px(kLane - 2),
      KeyColor(s.cat.empty() ? s.name : s.cat));
  if (const std::string label = Truncated(s.name, width - 4); !label.empty()) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>", Px(x0 + 2), Px(y + kLane - 5),
                       EscapeXml(label));
  }
  return svg + "</g>";
}

std::string RenderCounter(const Trace& trace, const TraceCounter& counter, const TimeAxis& axis) {
  double lo = 0, hi = 0;
  for (const auto& [arg, points] : counter.series) {
    for (const auto& [ts, value] : points) {
      lo = std::min(lo, value);
      hi = std::max(hi, value);
    }
  }
  const double top = 8, bottom = top + kCounterHeight;
  const LinearScale y(lo, hi, bottom, top);
  std::vector<std::pair<std::string, std::string>> legend;
  std::string areas;
  size_t color = 0;
  for (const auto& [arg, points] : counter.series) {
    const std::string fill = SeriesColor(color++);
    // A counter holds its value until the next sample: a step line.
    std::string path = fmt::format("M{} {}", Px(axis.X(points.front().first)), Px(y(0)));
    for (const auto& [ts, value] : points) {
      path += fmt::format(" H{} V{}", Px(axis.X(ts)), Px(y(value)));
    }
    path += fmt::format(" H{} V{} Z", Px(kPlotRight), Px(y(0)));
    double peak = points.front().second;
    for (const auto& point : points) peak = std::max(peak, point.second);
    areas += fmt::format(
        "<path class=\"counter-area\" d=\"{}\" fill=\"{}\" stroke=\"{}\"><title>{}: last {}, "
        "max {}</title></path>",
        path, fill, fill, EscapeXml(arg), FormatValue(points.back().second), FormatValue(peak));
    legend.emplace_back(fmt::format("{} (max {})", arg, FormatValue(peak)), fill);
  }
  double legend_height = 0;
  const std::string legend_svg =
      RenderLegend(legend, kPlotLeft, bottom + 24, kPlotRight - kPlotLeft, &legend_height);
  const double height = bottom + 28 + legend_height;
  std::string svg = fmt::format(
      "<svg class=\"counter-chart\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "role=\"img\" aria-label=\"{2}\">",
      kWidth, Px(height), EscapeXml(counter.name));
  svg += fmt::format("<text class=\"row-label\" x=\"4\" y=\"{}\">{}</text>", Px(top + 12),
                     EscapeXml(Truncated(ProcessLabel(trace, counter.pid), kPlotLeft - 60)));
  svg += fmt::format("<text class=\"title\" x=\"4\" y=\"{}\">{}</text>", Px(top + 28),
                     EscapeXml(Truncated(counter.name, kPlotLeft - 60)));
  svg += RenderYAxis(y, NiceTicks(y.lo(), y.hi(), 2), kPlotLeft, kPlotRight);
  svg += RenderXAxis(axis.scale, NiceTicks(axis.scale.lo(), axis.scale.hi(), 10), bottom, bottom);
  svg += areas + legend_svg;
  return svg + "</svg>";
}

}  // namespace

std::string RenderTimeline(const Trace& trace) {
  std::vector<Row> rows = MakeRows(trace);
  if (rows.empty() && trace.counters.empty()) {
    return "<p class=\"empty\">The trace holds no slices, flows or counters to draw.</p>";
  }
  std::string note;
  if (rows.size() > kMaxRows) {
    size_t slices = 0;
    for (size_t i = kMaxRows; i < rows.size(); ++i) slices += rows[i].slices.size();
    note = fmt::format(
        "<p class=\"note left-out\">Left out: {} more threads and their {} slices are not drawn "
        "(the timeline draws at most {} threads).</p>\n",
        rows.size() - kMaxRows, slices, kMaxRows);
    rows.resize(kMaxRows);
  }
  const TimeAxis axis = MakeTimeAxis(trace);
  // Layers, back to front: row backgrounds and labels, the time grid, the
  // slices, the flows (drawn last so that no bar hides an arrow).
  std::string tracks, slices, flows;
  std::map<Track, double> row_middle;
  double y = 8;
  const double rows_top = y;
  for (size_t i = 0; i < rows.size(); ++i) {
    Row& row = rows[i];
    if (i == 0 || row.track.first != rows[i - 1].track.first) {
      tracks += fmt::format("<text class=\"process-label\" x=\"4\" y=\"{}\">{}</text>", Px(y + 14),
                            EscapeXml(ProcessLabel(trace, row.track.first)));
      y += kProcessHeader;
    }
    row.y = y;
    const double height = row.lanes * kLane;
    row_middle[row.track] = y + kLane / 2;
    tracks += fmt::format(
        "<g class=\"track\" data-pid=\"{}\" data-tid=\"{}\"><rect class=\"track-bg{}\" x=\"0\" "
        "y=\"{}\" width=\"{}\" height=\"{}\"/><text class=\"row-label\" x=\"14\" "
        "y=\"{}\">{}</text></g>",
        EscapeXml(row.track.first), EscapeXml(row.track.second), i % 2 ? " odd" : "", Px(y - 2),
        kWidth, Px(height + 4), Px(y + 12),
        EscapeXml(Truncated(ThreadLabel(trace, row.track), kPlotLeft - 24)));
    for (const auto& [slice, lane] : row.slices) slices += RenderSlice(*slice, lane, y, axis);
    y += height + kRowGap;
  }
  for (const TraceFlow& f : trace.flows) {
    const auto from = row_middle.find({f.from_pid, f.from_tid});
    const auto to = row_middle.find({f.to_pid, f.to_tid});
    if (from == row_middle.end() || to == row_middle.end()) continue;  // A row left out.
    flows += fmt::format(
        "<path class=\"flow\" d=\"M{} {} L{} {}\" marker-end=\"url(#rill-flow-arrow)\">"
        "<title>{} (id {}): {} later</title></path>",
        Px(axis.X(f.from_ts)), Px(from->second), Px(axis.X(f.to_ts)), Px(to->second),
        EscapeXml(f.name.empty() ? "flow" : f.name), EscapeXml(f.id),
        Duration(f.to_ts - f.from_ts));
  }
  const double axis_y = y + 2;
  const double height = axis_y + 40;
  std::string svg = note;
  svg += fmt::format(
      "<svg class=\"timeline\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" "
      "aria-label=\"timeline\"><defs><marker id=\"rill-flow-arrow\" viewBox=\"0 0 8 8\" "
      "refX=\"8\" refY=\"4\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">"
      "<path d=\"M0 0L8 4L0 8z\" fill=\"#333\"/></marker></defs>",
      kWidth, Px(height));
  svg += tracks;
  svg += RenderXAxis(axis.scale, NiceTicks(axis.scale.lo(), axis.scale.hi(), 10), axis_y, rows_top);
  svg += slices + flows;
  svg += fmt::format(
      "<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">time since the first "
      "event ({})</text>",
      Px((kPlotLeft + kPlotRight) / 2), Px(axis_y + 32), axis.unit);
  svg += "</svg>";

  std::vector<const TraceCounter*> counters;
  for (const TraceCounter& c : trace.counters) counters.push_back(&c);
  std::stable_sort(counters.begin(), counters.end(),
                   [&](const TraceCounter* a, const TraceCounter* b) {
                     if (a->pid != b->pid) {
                       return SortsBefore(trace.process_sort_index, a->pid, b->pid, a->pid, b->pid);
                     }
                     return a->name < b->name;
                   });
  for (const TraceCounter* c : counters) svg += RenderCounter(trace, *c, axis);
  return svg;
}

}  // namespace rill::cli
