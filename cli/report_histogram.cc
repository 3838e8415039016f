#include "cli/report_histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "cli/svg_plot.h"
#include "fmt/core.h"

namespace rill::cli {
namespace {

constexpr int kBins = 40;
constexpr double kWidth = 340, kHeight = 212;
constexpr double kLeft = 20, kRight = 268;  // The value axis; step labels go right of it.
constexpr double kFrontBaseline = 160;      // Where the latest step's outline stands.
constexpr double kStepOffset = 14;          // How far up each older step stands.
constexpr double kRidgeHeight = 60;         // The tallest bin of all steps.

bool Drawable(const HistogramProto& h) {
  return h.num() > 0 && std::isfinite(h.min()) && std::isfinite(h.max()) && h.min() <= h.max();
}

// The counts of `h` spread over `kBins` equal bins of [lo, hi]: a bucket's
// count is shared among the bins it overlaps (within the histogram's
// min..max, as its outer buckets reach to +-DBL_MAX).
std::vector<double> Resample(const HistogramProto& h, double lo, double hi) {
  std::vector<double> bins(kBins, 0.0);
  const double width = (hi - lo) / kBins;
  const auto bin_of = [&](double v) {
    return std::clamp(static_cast<int>(std::floor((v - lo) / width)), 0, kBins - 1);
  };
  double left = h.min();
  for (int i = 0; i < h.bucket_size(); ++i) {
    const double limit = i < h.bucket_limit_size() ? h.bucket_limit(i) : h.max();
    const double l = std::clamp(left, h.min(), h.max());
    const double r = std::clamp(limit, h.min(), h.max());
    left = limit;
    const double count = h.bucket(i);
    if (!(count > 0)) continue;
    if (r <= l) {
      bins[bin_of(l)] += count;
      continue;
    }
    for (int b = bin_of(l); b <= bin_of(r); ++b) {
      const double overlap = std::min(r, lo + (b + 1) * width) - std::max(l, lo + b * width);
      if (overlap > 0) bins[b] += count * overlap / (r - l);
    }
  }
  return bins;
}

std::string Summary(const HistogramPoint& p) {
  const HistogramProto& h = p.histogram;
  return fmt::format("min {} \u00b7 mean {} \u00b7 max {} \u00b7 n={}", FormatValue(h.min()),
                     FormatValue(h.sum() / h.num()), FormatValue(h.max()), FormatValue(h.num()));
}

}  // namespace

std::string RenderHistogramChart(const std::string& tag, const std::string& task,
                                 const std::vector<HistogramPoint>& points) {
  std::vector<const HistogramPoint*> drawn;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const HistogramPoint& p : points) {
    if (!Drawable(p.histogram)) continue;
    drawn.push_back(&p);
    lo = std::min(lo, p.histogram.min());
    hi = std::max(hi, p.histogram.max());
  }
  const LinearScale x(lo, hi, kLeft, kRight);
  std::vector<std::vector<double>> bins;
  double tallest = 0;
  for (const HistogramPoint* p : drawn) {
    bins.push_back(Resample(p->histogram, x.lo(), x.hi()));
    tallest = std::max(tallest, *std::max_element(bins.back().begin(), bins.back().end()));
  }

  std::string svg = fmt::format(
      "<svg class=\"histogram\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "role=\"img\" aria-label=\"{2}\">"
      "<text class=\"title\" x=\"{3}\" y=\"16\">{2}</text>"
      "<text class=\"subtitle\" x=\"{3}\" y=\"30\">{4}</text>",
      kWidth, kHeight, EscapeXml(tag), Px(kLeft), EscapeXml(task));
  if (drawn.empty()) {
    return svg + fmt::format("<text class=\"empty\" x=\"{}\" y=\"100\">no values</text></svg>",
                             Px(kLeft));
  }
  const double bin_width = (kRight - kLeft) / kBins;
  for (size_t i = 0; i < drawn.size(); ++i) {
    const size_t behind = drawn.size() - 1 - i;  // 0 for the latest step.
    const double base = kFrontBaseline - kStepOffset * static_cast<double>(behind);
    std::string path = fmt::format("M{} {}", Px(kLeft), Px(base));
    for (int b = 0; b < kBins; ++b) {
      const double height = tallest > 0 ? bins[i][b] / tallest * kRidgeHeight : 0;
      path += fmt::format(" L{} {}", Px(kLeft + (b + 0.5) * bin_width), Px(base - height));
    }
    path += fmt::format(" L{} {} Z", Px(kRight), Px(base));
    // Older steps fade, so that the latest reads first.
    const double opacity = 1.0 - 0.6 * static_cast<double>(behind) / kKeptHistogramSteps;
    svg += fmt::format(
        "<g class=\"ridge\"><title>step {}: {}</title>"
        "<path d=\"{}\" stroke-opacity=\"{:.2f}\"/>"
        "<text class=\"step\" x=\"{}\" y=\"{}\">step {}</text></g>",
        drawn[i]->step, Summary(*drawn[i]), path, opacity, Px(kRight + 6), Px(base),
        drawn[i]->step);
  }
  const HistogramPoint& latest = *drawn.back();
  const double mean = latest.histogram.sum() / latest.histogram.num();
  if (x.Contains(mean)) {
    svg += fmt::format(
        "<line class=\"mean\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"><title>mean {3}</title>"
        "</line>",
        Px(x(mean)), Px(kFrontBaseline), Px(kFrontBaseline - kRidgeHeight), FormatValue(mean));
  }
  svg += RenderXAxis(x, NiceTicks(x.lo(), x.hi(), 4), kFrontBaseline + 2, kFrontBaseline + 2);
  svg += fmt::format("<text class=\"stats\" x=\"{}\" y=\"{}\">{}</text>", Px(kLeft),
                     Px(kHeight - 8), EscapeXml(Summary(latest)));
  return svg + "</svg>";
}

}  // namespace rill::cli
