// Primitives for the inline SVG charts of `rill report`: escaping, a
// palette, scales with readable ticks, axes and a line chart with a legend.
#ifndef RILL_CLI_SVG_PLOT_H_
#define RILL_CLI_SVG_PLOT_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rill::cli {

// `text` safe inside an XML/HTML element or a double-quoted attribute.
std::string EscapeXml(std::string_view text);

// A coordinate with one decimal: enough for a screen, short in the file.
std::string Px(double value);

// The index-th colour of a palette whose first ten stay distinguishable.
std::string SeriesColor(size_t index);

// A colour chosen by `key`, the same for the same key in every chart.
std::string KeyColor(std::string_view key);

// Tick values that are multiples of `step` (1, 2 or 5 times a power of
// ten), about `target` of them, all within [lo, hi].
struct Ticks {
  std::vector<double> values;
  double step = 1;
};
Ticks NiceTicks(double lo, double hi, int target);

// `value` with the decimals a tick `step` needs ("0.25", "1500", "2e+06").
std::string FormatTick(double value, double step);
// `value` with four significant digits, for labels and tooltips.
std::string FormatValue(double value);

// Maps the domain [lo, hi] onto pixels [px_lo, px_hi] (px_lo may be the
// larger, for a y axis). An empty domain is widened around its value so that
// one point or a constant series still lands mid-chart.
class LinearScale {
 public:
  LinearScale(double lo, double hi, double px_lo, double px_hi);
  double operator()(double value) const;
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  bool Contains(double value) const { return value >= lo_ && value <= hi_; }

 private:
  double lo_, hi_, px_lo_, px_hi_;
};

using TickLabel = std::function<std::string(double value, double step)>;

// Tick marks and labels under a horizontal axis at y = `axis_y`, with grid
// lines up to `grid_top` (no grid when equal).
std::string RenderXAxis(const LinearScale& x, const Ticks& ticks, double axis_y, double grid_top,
                        const TickLabel& label = FormatTick);
// Tick marks and labels left of a vertical axis at x = `axis_x`, with grid
// lines across to `grid_right`.
std::string RenderYAxis(const LinearScale& y, const Ticks& ticks, double axis_x, double grid_right);

// Swatches and names in rows starting at (x, y), wrapping at `width`;
// returns the SVG and sets `height` to what the rows take.
std::string RenderLegend(const std::vector<std::pair<std::string, std::string>>& names_and_colors,
                         double x, double y, double width, double* height);

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), finite, in x order.
};

// A vertical marker line at x (a checkpoint on a step axis).
struct PlotMarker {
  double x = 0;
  std::string tooltip;
  std::string css_class = "marker";
};

struct LinePlotOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string css_class = "plot";
  TickLabel x_tick_label = FormatTick;
  std::vector<PlotMarker> markers;
  int width = 560;
  int height = 300;  // Of the plot and its axes; the legend adds rows below.
};

// A line chart: one polyline per series in the palette's order, axes with
// numbers, the title above and the legend below. A series with many points
// is thinned to the most a reader can see; one with few gets dots whose
// tooltips give each value.
std::string RenderLinePlot(const LinePlotOptions& options, const std::vector<PlotSeries>& series);

}  // namespace rill::cli

#endif  // RILL_CLI_SVG_PLOT_H_
