#include "transport/host_address.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace rill {
namespace {

bool IsIpv4Address(const std::string& host) {
  in_addr address{};
  return inet_pton(AF_INET, host.c_str(), &address) == 1;
}

bool IsUnderInvalid(const std::string& host) {
  std::string_view name = host;
  if (name.ends_with('.')) name.remove_suffix(1);
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  return lower == "invalid" || std::string_view(lower).ends_with(".invalid");
}

absl::Status ResolveError(const std::string& host, int code) {
  const std::string why = code == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(code);
  const std::string message = absl::StrFormat("cannot resolve host '%s': %s", host, why);
  return code == EAI_AGAIN ? absl::UnavailableError(message) : absl::InvalidArgumentError(message);
}

}  // namespace

bool IsLoopbackHost(const std::string& host_port) {
  std::string_view host = host_port;
  if (host.starts_with('[')) {
    host = host.substr(1, host.find(']') == std::string_view::npos ? 0 : host.find(']') - 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  in_addr v4{};
  if (inet_pton(AF_INET, std::string(host).c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  return host == "::1" || host == "localhost";
}

absl::StatusOr<std::string> BindableHost(const std::string& host) {
  if (host == "localhost") return std::string("127.0.0.1");
  if (host == "*" || host.starts_with('[') || IsIpv4Address(host)) return host;
  if (IsUnderInvalid(host)) return ResolveError(host, EAI_NONAME);
  if (if_nametoindex(host.c_str()) != 0) return host;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int code = getaddrinfo(host.c_str(), nullptr, &hints, &found); code != 0) {
    return ResolveError(host, code);
  }
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> results(found, freeaddrinfo);
  const addrinfo* chosen = nullptr;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      chosen = a;
      break;
    }
    if (a->ai_family == AF_INET6 && chosen == nullptr) chosen = a;
  }
  if (chosen == nullptr) return ResolveError(host, EAI_ADDRFAMILY);
  char text[INET6_ADDRSTRLEN] = {};
  if (chosen->ai_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(chosen->ai_addr)->sin_addr, text,
              sizeof(text));
    return std::string(text);
  }
  inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(chosen->ai_addr)->sin6_addr, text,
            sizeof(text));
  return absl::StrFormat("[%s]", text);
}

}  // namespace rill
