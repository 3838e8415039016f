#include <cstdio>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cli/commands.h"

namespace {

constexpr char kUsage[] =
    "usage: rill <command> [args]\n"
    "\n"
    "commands:\n"
    "  graph FILE [--to-text OUT | --to-binary OUT]\n"
    "      validate a GraphDef (.pb or .pbtxt) and "
    "summarize it, or convert it\n"
    "  run GRAPH [--feed NAME=FILE.npy|NAME=JSON]... [--init OP]... [--target OP]...\n"
    "      [--fetch TENSOR]... [--steps N] [--json] [--out DIR] [--log_device_placement]\n"
    "      [--target zmq://HOST:PORT [--curve_keys DIR]] [--device_count CPU=N]\n"
    "      [--allow_soft_placement]\n"
    "      [--replica-device-setter [--ps-strategy round_robin|greedy]]\n"
    "      run a GraphDef in this process or on a cluster: feed, run targets N times,\n"
    "      print fetches; --out writes DIR/NAME.npy per fetch (':' as '_', '/' a\n"
    "      subdirectory; names with an empty, '.' or '..' part are refused)\n"
    "  place GRAPH [--cluster 'ps=HOST:PORT[,...];worker=HOST:PORT[,...]']\n"
    "      [--replica-device-setter [--ps-strategy round_robin|greedy]] [--allow-soft-placement]\n"
    "      [--explain] [--partition] [--dot FILE]\n"
    "      show the device of every node, a summary per device and, with --partition,\n"
    "      the tensors sent between devices; --dot draws it for Graphviz\n"
    "  server --ps_hosts=HOST:PORT[,...] --worker_hosts=HOST:PORT[,...] --job_name=JOB\n"
    "      --task_index=N [--bind HOST[:PORT]] [--no-ipc] [--curve_keys DIR]\n"
    "      (or the cluster in TF_CONFIG) run one task of a cluster (a master and a worker)\n"
    "      until SIGTERM or SIGINT; with --curve_keys only its key holders get in, encrypted\n"
    "  keygen DIR [--server CLUSTER_DIR]\n"
    "      write a CURVE key pair for a cluster, or for a client authorized in CLUSTER_DIR\n"
    "  checkpoint PREFIX [--tensor NAME]\n"
    "      list the tensors of a V2 checkpoint (name, dtype, shape, bytes), or print one;\n"
    "      PREFIX may also be its .index file or a directory with a 'checkpoint' file\n"
    "  devices\n"
    "      list the devices this build can run on\n"
    "  help\n"
    "      print this message\n";

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  // Debian's abseil is built with Mutex deadlock detection on, which costs
  // every lock a graph update (a fifth of a small local step). The tests
  // keep it; the shipped binary does not pay for it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "graph") return rill::cli::RunGraphCommand(args);
  if (command == "devices") return rill::cli::RunDevicesCommand(args);
  if (command == "run") return rill::cli::RunRunCommand(args);
  if (command == "place") return rill::cli::RunPlaceCommand(args);
  if (command == "server") return rill::cli::RunServerCommand(args);
  if (command == "checkpoint") return rill::cli::RunCheckpointCommand(args);
  if (command == "keygen") return rill::cli::RunKeygenCommand(args);
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::fprintf(stderr, "rill: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
