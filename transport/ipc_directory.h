// The directories that hold RPC servers' ipc socket files: one per server,
// named after its process, so that a later server can remove what a killed one left.
#ifndef RILL_TRANSPORT_IPC_DIRECTORY_H_
#define RILL_TRANSPORT_IPC_DIRECTORY_H_

#include <string>

#include "absl/status/statusor.h"

namespace rill::rpc_internal {

// $TMPDIR when a socket address under it fits, else /tmp.
std::string IpcBaseDirectory();

// Removes the stale directories under `base`, then creates
// BASE/rill-rpc-PID-XXXXXX. Errors: UNAVAILABLE naming `base`.
absl::StatusOr<std::string> MakeIpcDirectory(const std::string& base);

// Removes each BASE/rill-rpc-PID-* whose process is gone and whose socket
// file is absent or has no listener (a process in another pid namespace
// that shares the directory may still be serving it). Returns how many.
int RemoveStaleIpcDirectories(const std::string& base);

}  // namespace rill::rpc_internal

#endif  // RILL_TRANSPORT_IPC_DIRECTORY_H_
