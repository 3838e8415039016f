// LocalRendezvous: the rendezvous of one step whose partitions all run in
// this process: a table of sent tensors and waiting receivers.
#ifndef RILL_RUNTIME_EXEC_LOCAL_RENDEZVOUS_H_
#define RILL_RUNTIME_EXEC_LOCAL_RENDEZVOUS_H_

#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "graph/tensor.h"
#include "kernels/framework/rendezvous.h"

namespace rill {

// One per step: keys are unique within a step, so a new step gets a new
// rendezvous. Callbacks run outside the lock.
// Thread safety: all methods may be called concurrently.
class LocalRendezvous final : public Rendezvous {
 public:
  LocalRendezvous() = default;
  // Aborts receivers still waiting (CANCELLED), so none is left hanging.
  ~LocalRendezvous() override;

  absl::Status Send(const PreparedRendezvousKey& key, const Tensor& value) override {
    return SendText(key.text, value);
  }
  void RecvAsync(const PreparedRendezvousKey& key, DoneCallback done) override;
  // As Send, by the key's text (a tensor that arrived from another task).
  absl::Status SendText(std::string_view key, const Tensor& value);
  void StartAbort(const absl::Status& status) override;

 private:
  struct Slot {
    bool sent = false;
    bool received = false;
    Tensor value;
    DoneCallback waiting;  // Set while a receiver waits.
  };

  absl::Mutex mu_;
  absl::Status aborted_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Slot> slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_EXEC_LOCAL_RENDEZVOUS_H_
