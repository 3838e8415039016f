#include "runtime/device/device_query.h"

namespace rill {

GpuQuery QueryGpuDevices() {
  GpuQuery query;
  query.reason = "no CUDA device: rill was built without CUDA";
  return query;
}

}  // namespace rill
