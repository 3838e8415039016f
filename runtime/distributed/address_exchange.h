// The address exchange of an MPI job: MPI's environment names no hosts, so
// every rank sends its address to a coordinator (served by rank 0), which
// answers everyone with all the addresses once every rank has registered.
#ifndef RILL_RUNTIME_DISTRIBUTED_ADDRESS_EXCHANGE_H_
#define RILL_RUNTIME_DISTRIBUTED_ADDRESS_EXCHANGE_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "transport/rpc.h"

namespace rill {

// The methods the coordinator serves. Bodies are text:
//   Register: "RANK SIZE HOST:PORT"; the reply, once all SIZE ranks have
//             registered, is every rank's address, one a line, by rank.
//   Done:     "RANK": the rank has its reply; the coordinator stops once
//             every rank has said so.
inline constexpr char kAddressExchangeRegister[] = "AddressExchange/Register";
inline constexpr char kAddressExchangeDone[] = "AddressExchange/Done";

// Serves one exchange of `size` ranks at exactly `address` ("HOST:PORT").
// A rank may register again (a retry) with the address it gave before; a
// different one is INVALID_ARGUMENT, and an address another rank holds is
// ALREADY_EXISTS (the rank picks another port). At the deadline, ranks
// still waiting get DEADLINE_EXCEEDED naming the ranks missing.
// The exchange is neither authenticated nor encrypted: it carries only
// addresses, and only until every rank has them.
// Thread safety: all methods may be called concurrently.
class AddressExchangeCoordinator {
 public:
  static absl::StatusOr<std::unique_ptr<AddressExchangeCoordinator>> Start(
      const std::string& address, int size, absl::Time deadline);
  // Stops serving.
  ~AddressExchangeCoordinator();

  // Returns once every rank has said Done, or at the deadline; OK in the
  // first case, else DEADLINE_EXCEEDED naming the ranks that did not.
  absl::Status WaitDone();

 private:
  struct Rank {
    std::string address;
    std::vector<RpcDone> waiting;  // Register calls not answered yet.
  };

  AddressExchangeCoordinator(std::string address, int size, absl::Time deadline)
      : address_(std::move(address)), size_(size), deadline_(deadline) {}
  void Register(RpcMessage request, RpcDone reply);
  void Done(RpcMessage request, RpcDone reply);
  // Fails the Register calls still waiting at the deadline.
  void ExpireAtDeadline();
  // "1, 4": the ranks in [0, size) that `has` says are missing.
  template <typename Has>
  std::string MissingRanks(Has has) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // Constant after Start.
  const std::string address_;
  const int size_;
  const absl::Time deadline_;

  absl::Mutex mu_;
  std::vector<std::unique_ptr<Rank>> ranks_ ABSL_GUARDED_BY(mu_);  // By rank; null: not yet.
  int registered_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<bool> done_ ABSL_GUARDED_BY(mu_);
  int done_count_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Past the deadline without every rank: what Register answers.
  absl::Status expired_ ABSL_GUARDED_BY(mu_);

  // Stopped by the destructor before the state above goes.
  std::thread expiry_;
  std::unique_ptr<RpcServer> server_;
};

struct AddressExchangeOptions {
  std::string coordinator;  // "HOST:PORT"; rank 0 binds exactly this.
  int rank = 0;
  int size = 1;
  // This rank's host; empty: the local address that routes to the
  // coordinator (LocalAddressToward).
  std::string host;
  absl::Duration deadline = absl::Seconds(60);
};

// Registers this rank at a port picked free on its host and returns every
// rank's "HOST:PORT", by rank; rank 0 also serves the coordinator for the
// length of the exchange. A coordinator that cannot be reached is retried
// until the deadline, then DEADLINE_EXCEEDED naming it.
absl::StatusOr<std::vector<std::string>> ExchangeAddresses(const AddressExchangeOptions& options);

// The address of the local interface that packets to `host` leave from
// (a UDP socket connected to it, which sends nothing, and getsockname).
absl::StatusOr<std::string> LocalAddressToward(const std::string& host);

// A port that nothing on `host` listens on now: bound as port 0, then
// released for the caller's server to bind.
absl::StatusOr<int> PickFreePort(const std::string& host);

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_ADDRESS_EXCHANGE_H_
