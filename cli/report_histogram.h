// Draws one series of a histogram tag as a small multiple: the
// distributions of its latest steps as offset outlines, min/mean/max labelled.
#ifndef RILL_CLI_REPORT_HISTOGRAM_H_
#define RILL_CLI_REPORT_HISTOGRAM_H_

#include <string>
#include <vector>

#include "cli/report_data.h"

namespace rill::cli {

// An <svg class="histogram"> of `points` (in step order; the last is drawn
// in front), titled with `tag` and `task`. Buckets are spread evenly over a
// common value axis, as TensorBoard resamples them, so that steps compare.
std::string RenderHistogramChart(const std::string& tag, const std::string& task,
                                 const std::vector<HistogramPoint>& points);

}  // namespace rill::cli

#endif  // RILL_CLI_REPORT_HISTOGRAM_H_
