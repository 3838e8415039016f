#include "tests/fuzz/fuzz_util.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <type_traits>

#include "google/protobuf/stubs/logging.h"
#include "graph/allocator.h"

namespace rill::fuzz {
namespace {

template <typename T>
bool SameElement(const T& a, const T& b) {
  if constexpr (std::is_floating_point_v<T>) {
    return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(T)) == 0;
  } else if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>) {
    return SameElement(a.real(), b.real()) && SameElement(a.imag(), b.imag());
  } else if constexpr (std::is_same_v<T, std::string>) {
    return a == b;
  } else {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  }
}

void RemoveScratchDir();

std::string MakeScratchDir() {
  // Memory-backed when there is /dev/shm: the readers' files are written
  // for every input, and some writers (event files) sync them.
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  if (tmp == nullptr && access("/dev/shm", W_OK) == 0) base = "/dev/shm";
  std::string pattern = base + "/rill-fuzz-XXXXXX";
  Check(mkdtemp(pattern.data()) != nullptr, "cannot create a scratch directory");
  std::atexit(RemoveScratchDir);
  return pattern;
}

void RemoveScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(ScratchDir(), ignored);
}

}  // namespace

std::vector<std::string_view> Split(std::string_view data, std::string_view separator) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = data.find(separator);
    if (at == std::string_view::npos) break;
    parts.push_back(data.substr(0, at));
    data.remove_prefix(at + separator.size());
  }
  parts.push_back(data);
  return parts;
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.append(separator);
    out.append(parts[i]);
  }
  return out;
}

const std::string& ScratchDir() {
  // Never destroyed: RemoveScratchDir reads it at exit.
  static const std::string* const dir = new std::string(MakeScratchDir());
  return *dir;
}

std::string FreshScratchDir(const std::string& name) {
  const std::string dir = ScratchDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directory(dir);
  return dir;
}

void WriteFile(const std::string& path, std::string_view bytes) {
  // A new file rather than a truncated one: ext4 flushes a file rewritten
  // after truncation when it is closed, which costs milliseconds per input.
  std::error_code ignored;
  std::filesystem::remove(path, ignored);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  Check(out.good(), "cannot write a scratch file");
}

std::string WriteScratchFile(const std::string& name, std::string_view bytes) {
  const std::string path = ScratchDir() + "/" + name;
  WriteFile(path, bytes);
  return path;
}

bool SameTensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
  const int64_t n = a.NumElements();
  if (a.dtype() == DT_RESOURCE) {
    const auto* x = static_cast<const ResourceHandleProto*>(a.raw_data());
    const auto* y = static_cast<const ResourceHandleProto*>(b.raw_data());
    for (int64_t i = 0; i < n; ++i) {
      if (x[i].SerializeAsString() != y[i].SerializeAsString()) return false;
    }
    return true;
  }
  return DispatchType(
      a.dtype(),
      [&]<typename T>() {
        const T* x = a.data<T>();
        const T* y = b.data<T>();
        for (int64_t i = 0; i < n; ++i) {
          if (!SameElement(x[i], y[i])) return false;
        }
        return true;
      },
      [&] {
        return a.TotalBytes() == b.TotalBytes() &&
               (a.TotalBytes() == 0 ||
                std::memcmp(a.raw_data(), b.raw_data(), a.TotalBytes()) == 0);
      });
}

uint64_t TouchElements(const Tensor& tensor) {
  if (!tensor.IsInitialized()) return 0;
  uint64_t sum = 0;
  if (tensor.dtype() == DT_STRING) {
    const std::string* strings = tensor.data<std::string>();
    for (int64_t i = 0; i < tensor.NumElements(); ++i) {
      sum += strings[i].size();
      for (const char c : strings[i]) sum += static_cast<unsigned char>(c);
    }
    return sum;
  }
  if (tensor.dtype() == DT_RESOURCE) {
    const auto* handles = static_cast<const ResourceHandleProto*>(tensor.raw_data());
    for (int64_t i = 0; i < tensor.NumElements(); ++i) sum += handles[i].ByteSizeLong();
    return sum;
  }
  const auto* bytes = static_cast<const unsigned char*>(tensor.raw_data());
  for (size_t i = 0; i < tensor.TotalBytes(); ++i) sum += bytes[i];
  return sum;
}

void Check(bool ok, std::string_view what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz target check failed: %.*s\n", static_cast<int>(what.size()),
               what.data());
  std::abort();
}

void Initialize(size_t max_tensor_bytes) {
  google::protobuf::SetLogHandler(nullptr);
  if (max_tensor_bytes > 0) SetMaxTensorBytes(max_tensor_bytes);
}

}  // namespace rill::fuzz
