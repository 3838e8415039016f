#include "cli/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>

#include "fmt/core.h"

namespace rill::cli {
namespace {

// Past this many points a polyline is denser than the pixels it covers and
// only makes the page heavy.
constexpr size_t kMaxPlotPoints = 1500;
// Up to this many points each gets a dot with its value as a tooltip.
constexpr size_t kMaxDottedPoints = 60;
// The width of a legend or label character at 11px, for layout without a
// font to measure with.
constexpr double kCharWidth = 6.5;

constexpr double kMarginLeft = 64, kMarginRight = 16, kMarginTop = 30, kMarginBottom = 46;

}  // namespace

std::string EscapeXml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // Control characters are not allowed in XML text; names from a
        // corrupt file may hold them.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string Px(double value) { return fmt::format("{:.1f}", value); }

std::string SeriesColor(size_t index) {
  static constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                             "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kPalette[index % std::size(kPalette)];
}

std::string KeyColor(std::string_view key) {
  // FNV-1a: stable across runs and platforms, unlike std::hash.
  uint32_t hash = 2166136261u;
  for (const char c : key) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
  return SeriesColor(hash % 10);
}

Ticks NiceTicks(double lo, double hi, int target) {
  Ticks ticks;
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo || target < 1) return ticks;
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double normalized = raw / magnitude;
  const double factor = normalized < 1.5 ? 1 : normalized < 3 ? 2 : normalized < 7 ? 5 : 10;
  ticks.step = factor * magnitude;
  const double first = std::ceil(lo / ticks.step - 1e-9) * ticks.step;
  for (double value = first; value <= hi + ticks.step * 1e-9; value += ticks.step) {
    // Repeated addition leaves 1e-17 where 0 belongs, which would print as such.
    ticks.values.push_back(std::abs(value) < ticks.step * 1e-9 ? 0.0 : value);
    if (ticks.values.size() > static_cast<size_t>(4 * target)) break;
  }
  return ticks;
}

std::string FormatTick(double value, double step) {
  if (!(step > 0)) return FormatValue(value);
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  if (decimals > 6 || std::abs(value) >= 1e7) return fmt::format("{:.3g}", value);
  return fmt::format("{:.{}f}", value, decimals);
}

std::string FormatValue(double value) { return fmt::format("{:.4g}", value); }

LinearScale::LinearScale(double lo, double hi, double px_lo, double px_hi)
    : lo_(lo), hi_(hi), px_lo_(px_lo), px_hi_(px_hi) {
  if (!std::isfinite(lo_) || !std::isfinite(hi_)) {
    lo_ = 0;
    hi_ = 1;
  } else if (hi_ <= lo_) {
    const double pad = lo_ == 0 ? 1.0 : std::abs(lo_) * 0.1;
    lo_ -= pad;
    hi_ = lo_ + 2 * pad;
  }
}

double LinearScale::operator()(double value) const {
  return px_lo_ + (value - lo_) / (hi_ - lo_) * (px_hi_ - px_lo_);
}

std::string RenderXAxis(const LinearScale& x, const Ticks& ticks, double axis_y, double grid_top,
                        const TickLabel& label) {
  std::string svg = "<g class=\"axis x-axis\">";
  for (const double value : ticks.values) {
    const std::string px = Px(x(value));
    if (grid_top != axis_y) {
      svg += fmt::format("<line class=\"grid\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>", px,
                         Px(grid_top), Px(axis_y));
    }
    svg += fmt::format(
        "<line class=\"tick\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>"
        "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
        px, Px(axis_y), Px(axis_y + 4), Px(axis_y + 15), EscapeXml(label(value, ticks.step)));
  }
  return svg + "</g>";
}

std::string RenderYAxis(const LinearScale& y, const Ticks& ticks, double axis_x,
                        double grid_right) {
  std::string svg = "<g class=\"axis y-axis\">";
  for (const double value : ticks.values) {
    const std::string py = Px(y(value));
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{1}\" y1=\"{0}\" x2=\"{2}\" y2=\"{0}\"/>"
        "<line class=\"tick\" x1=\"{3}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\"/>"
        "<text x=\"{4}\" y=\"{5}\" text-anchor=\"end\">{6}</text>",
        py, Px(axis_x), Px(grid_right), Px(axis_x - 4), Px(axis_x - 6), Px(y(value) + 4),
        EscapeXml(FormatTick(value, ticks.step)));
  }
  return svg + "</g>";
}

std::string RenderLegend(const std::vector<std::pair<std::string, std::string>>& names_and_colors,
                         double x, double y, double width, double* height) {
  constexpr double kRow = 16;
  std::string svg = "<g class=\"legend\">";
  double cursor = x, row_y = y;
  for (const auto& [name, color] : names_and_colors) {
    const double item = 16 + kCharWidth * static_cast<double>(name.size()) + 14;
    if (cursor > x && cursor + item > x + width) {
      cursor = x;
      row_y += kRow;
    }
    svg += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
        "<text x=\"{}\" y=\"{}\">{}</text>",
        Px(cursor), Px(row_y), color, Px(cursor + 14), Px(row_y + 9), EscapeXml(name));
    cursor += item;
  }
  *height = names_and_colors.empty() ? 0 : row_y - y + kRow;
  return svg + "</g>";
}

std::string RenderLinePlot(const LinePlotOptions& options, const std::vector<PlotSeries>& series) {
  const double width = options.width, height = options.height;
  const double left = kMarginLeft, right = width - kMarginRight;
  const double top = kMarginTop, bottom = height - kMarginBottom;

  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (const PlotSeries& s : series) {
    for (const auto& [px, py] : s.points) {
      x_lo = std::min(x_lo, px);
      x_hi = std::max(x_hi, px);
      y_lo = std::min(y_lo, py);
      y_hi = std::max(y_hi, py);
    }
  }
  // Headroom so that a line at its extreme does not merge with the frame.
  const double pad = (y_hi - y_lo) * 0.05;
  const LinearScale x(x_lo, x_hi, left, right);
  const LinearScale y(y_lo - pad, y_hi + pad, bottom, top);

  std::vector<std::pair<std::string, std::string>> legend_items;
  for (size_t i = 0; i < series.size(); ++i) {
    legend_items.emplace_back(series[i].name, SeriesColor(i));
  }
  double legend_height = 0;
  const std::string legend =
      RenderLegend(legend_items, left, height - 4, right - left, &legend_height);
  const double total_height = height + legend_height;

  std::string svg = fmt::format(
      "<svg class=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
      "aria-label=\"{}\">",
      EscapeXml(options.css_class), width, Px(total_height), width, Px(total_height),
      EscapeXml(options.title));
  svg += fmt::format("<text class=\"title\" x=\"{}\" y=\"18\" text-anchor=\"middle\">{}</text>",
                     Px(width / 2), EscapeXml(options.title));
  svg += RenderYAxis(y, NiceTicks(y.lo(), y.hi(), 5), left, right);
  svg += RenderXAxis(x, NiceTicks(x.lo(), x.hi(), 6), bottom, bottom, options.x_tick_label);
  svg += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                     Px(left), Px(top), Px(right - left), Px(bottom - top));
  svg +=
      fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                  Px((left + right) / 2), Px(bottom + 32), EscapeXml(options.x_label));
  svg += fmt::format(
      "<text class=\"axis-label\" transform=\"translate(14 {}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>",
      Px((top + bottom) / 2), EscapeXml(options.y_label));

  for (const PlotMarker& marker : options.markers) {
    if (!x.Contains(marker.x)) continue;
    const double mx = x(marker.x);
    svg += fmt::format(
        "<g class=\"{0}\"><title>{1}</title>"
        "<line x1=\"{2}\" y1=\"{3}\" x2=\"{2}\" y2=\"{4}\"/>"
        "<path d=\"M{2} {4}l-4 6h8z\"/></g>",
        EscapeXml(marker.css_class), EscapeXml(marker.tooltip), Px(mx), Px(top), Px(bottom));
  }

  bool any_points = false;
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& points = series[i].points;
    if (points.empty()) continue;
    any_points = true;
    const std::string color = SeriesColor(i);
    const size_t stride = (points.size() + kMaxPlotPoints - 1) / kMaxPlotPoints;
    std::string coordinates;
    for (size_t j = 0; j < points.size(); j += stride) {
      // The last point is always drawn: it is the one a reader looks for.
      const size_t k = j + stride >= points.size() ? points.size() - 1 : j;
      coordinates += Px(x(points[k].first)) + "," + Px(y(points[k].second)) + " ";
      if (k == points.size() - 1) break;
    }
    svg += fmt::format("<polyline class=\"series\" fill=\"none\" stroke=\"{}\" points=\"{}\"/>",
                       color, coordinates);
    if (points.size() <= kMaxDottedPoints) {
      for (const auto& [px, py] : points) {
        svg += fmt::format(
            "<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\"><title>{}: {} at "
            "{}</title></circle>",
            Px(x(px)), Px(y(py)), color, EscapeXml(series[i].name), FormatValue(py),
            EscapeXml(options.x_tick_label(px, 0)));
      }
    }
  }
  if (!any_points) {
    svg += fmt::format(
        "<text class=\"empty\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">no finite "
        "values</text>",
        Px((left + right) / 2), Px((top + bottom) / 2));
  }
  svg += legend;
  return svg + "</svg>";
}

}  // namespace rill::cli
