// An NCHW node's layout attrs restated in NHWC order, so that the readers
// of window_geometry.h, which take NHWC attrs, serve both data formats.
#ifndef RILL_KERNELS_COMMON_NHWC_NODE_H_
#define RILL_KERNELS_COMMON_NHWC_NODE_H_

#include <array>
#include <cstdint>
#include <vector>

#include "graph/attr_value_util.h"
#include "graph/proto/node_def.pb.h"

namespace rill::window {

// A copy of `node` with strides, dilations and ksize (4 entries) and
// explicit_paddings (8) permuted from NCHW to NHWC order and data_format
// NHWC. Lists of other lengths are left as they are for the readers to
// reject. REQUIRES: node's data_format is NCHW.
inline NodeDef AsNhwcNode(const NodeDef& node) {
  NodeDef nhwc = node;
  auto& attrs = *nhwc.mutable_attr();
  for (const char* name : {"strides", "dilations", "ksize"}) {
    auto it = attrs.find(name);
    if (it == attrs.end() || it->second.list().i_size() != 4) continue;
    auto& v = *it->second.mutable_list()->mutable_i();
    const std::array<int64_t, 4> nchw = {v[0], v[1], v[2], v[3]};
    v[1] = nchw[2];
    v[2] = nchw[3];
    v[3] = nchw[1];
  }
  if (auto it = attrs.find("explicit_paddings");
      it != attrs.end() && it->second.list().i_size() == 8) {
    auto& v = *it->second.mutable_list()->mutable_i();
    const std::vector<int64_t> nchw(v.begin(), v.end());
    for (int i = 0; i < 2; ++i) {
      v[2 + i] = nchw[4 + i];  // Height.
      v[4 + i] = nchw[6 + i];  // Width.
      v[6 + i] = nchw[2 + i];  // Channels.
    }
  }
  attrs["data_format"] = MakeAttr("NHWC");
  return nhwc;
}

}  // namespace rill::window

#endif  // RILL_KERNELS_COMMON_NHWC_NODE_H_
