// The rill subcommands. Each takes the arguments after its name and
// returns the process exit code: 0 success, 1 failure (a one-line reason on
// stderr), 2 usage error.
#ifndef RILL_CLI_COMMANDS_H_
#define RILL_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace rill::cli {

int RunGraphCommand(const std::vector<std::string>& args);
int RunDevicesCommand(const std::vector<std::string>& args);
int RunRunCommand(const std::vector<std::string>& args);
int RunPlaceCommand(const std::vector<std::string>& args);
int RunServerCommand(const std::vector<std::string>& args);
int RunClusterCommand(const std::vector<std::string>& args);
int RunCheckpointCommand(const std::vector<std::string>& args);
int RunKeygenCommand(const std::vector<std::string>& args);
int RunReportCommand(const std::vector<std::string>& args);
int RunLaunchCommand(const std::vector<std::string>& args);

}  // namespace rill::cli

#endif  // RILL_CLI_COMMANDS_H_
