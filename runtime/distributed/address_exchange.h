// The address exchange of an MPI job: MPI's environment names no hosts, so
// every rank sends its address to a coordinator (served by rank 0), which
// answers everyone with all the addresses once every rank has registered.
#ifndef RILL_RUNTIME_DISTRIBUTED_ADDRESS_EXCHANGE_H_
#define RILL_RUNTIME_DISTRIBUTED_ADDRESS_EXCHANGE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"
#include "runtime/distributed/exchange_messages.h"
#include "transport/curve.h"
#include "transport/rpc.h"

namespace rill {

// The methods the coordinator serves (bodies: exchange_messages.h).
//   Register: a rank's address; answered, once every rank has registered,
//             with every rank's address.
//   Done:     the rank has its answer; the coordinator stops once every
//             rank has said so.
inline constexpr char kAddressExchangeRegister[] = "AddressExchange/Register";
inline constexpr char kAddressExchangeDone[] = "AddressExchange/Done";

struct AddressExchangeOptions {
  std::string coordinator;  // "HOST:PORT"; rank 0 binds exactly this.
  int rank = 0;
  int size = 1;
  // This rank's host; empty: the local address that routes to the
  // coordinator (LocalAddressToward).
  std::string host;
  absl::Duration deadline = absl::Seconds(60);
  // A secret every rank of the job has and no stranger (at least
  // kMinExchangeSecretBytes): every message, the coordinator's answer
  // included, carries a code made with it, and one without the right code
  // is refused, so a stranger who reaches the coordinator cannot put its
  // own address into the cluster.
  std::string secret;
  // Names where the secret came from, in errors ("RILL_EXCHANGE_TOKEN").
  std::string secret_source = "the address exchange's secret";
  // The cluster's CURVE keys (--curve_keys): the exchange speaks CURVE too,
  // so only their holders connect and nothing travels in the clear. Null:
  // plain tcp, the codes alone keeping strangers out.
  std::shared_ptr<const CurveKeys> curve;
  // Where the coordinator logs refused messages (a few lines at most,
  // never their bytes); null: stderr.
  LogSink* log = nullptr;
};

// Serves one exchange of options.size ranks at exactly options.coordinator
// until the deadline. A message without the code of options.secret is
// refused (UNAUTHENTICATED) and changes nothing. A rank may register again
// (a retry) with the address it gave before; a different one is
// INVALID_ARGUMENT, and an address another rank holds is ALREADY_EXISTS
// (the rank picks another port). At the deadline, ranks still waiting get
// DEADLINE_EXCEEDED naming the ranks missing. Without keys the exchange is
// not encrypted: it carries only addresses, authenticated by their codes,
// and only until every rank has them.
// Thread safety: all methods may be called concurrently.
class AddressExchangeCoordinator {
 public:
  // Serves until `deadline`; options.rank, host and deadline are unused.
  static absl::StatusOr<std::unique_ptr<AddressExchangeCoordinator>> Start(
      const AddressExchangeOptions& options, absl::Time deadline);
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

  AddressExchangeCoordinator(std::string address, int size, absl::Time deadline, ExchangeKey key,
                             LogSink* log)
      : address_(std::move(address)),
        size_(size),
        deadline_(deadline),
        key_(std::move(key)),
        log_(OrDefault(log)) {}
  void Register(RpcMessage request, RpcDone reply);
  void Done(RpcMessage request, RpcDone reply);
  // Fails the Register calls still waiting at the deadline.
  void ExpireAtDeadline();
  // "1, 4": the ranks in [0, size) that `has` says are missing.
  template <typename Has>
  std::string MissingRanks(Has has) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Logs a refused message's error, for the first few refused; the rest
  // are counted, and the count logged when the coordinator stops. A
  // stranger's flood thus makes a bounded number of lines.
  void LogRefused(const absl::Status& why);

  // Constant after Start.
  const std::string address_;
  const int size_;
  const absl::Time deadline_;
  const ExchangeKey key_;
  LogSink* const log_;

  absl::Mutex mu_;
  std::vector<std::unique_ptr<Rank>> ranks_ ABSL_GUARDED_BY(mu_);  // By rank; null: not yet.
  int registered_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<bool> done_ ABSL_GUARDED_BY(mu_);
  int done_count_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Past the deadline without every rank: what Register answers.
  absl::Status expired_ ABSL_GUARDED_BY(mu_);
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;

  // Stopped by the destructor before the state above goes.
  std::thread expiry_;
  std::unique_ptr<RpcServer> server_;
};

// Registers this rank at a port picked free on its host and returns every
// rank's "HOST:PORT", by rank; rank 0 also serves the coordinator for the
// length of the exchange. A coordinator that cannot be reached is retried
// until the deadline, then DEADLINE_EXCEEDED naming it; one that refuses
// this rank's code, or answers without the job's, is UNAUTHENTICATED.
absl::StatusOr<std::vector<std::string>> ExchangeAddresses(const AddressExchangeOptions& options);

// The address of the local interface that packets to `host` leave from
// (a UDP socket connected to it, which sends nothing, and getsockname).
absl::StatusOr<std::string> LocalAddressToward(const std::string& host);

// A port that nothing on `host` listens on now: bound as port 0, then
// released for the caller's server to bind.
absl::StatusOr<int> PickFreePort(const std::string& host);

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_ADDRESS_EXCHANGE_H_
