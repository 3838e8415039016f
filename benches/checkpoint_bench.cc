// Saving and restoring 256 MiB of variables (16 float tensors of 16 MiB)
// through BundleWriter and BundleReader, beside plain write(2) and read(2)
// of the same bytes in the same run. Files go to a fresh directory under
// $TMPDIR (or /tmp), removed at exit.
//
// Save: the bundle writer checksums every tensor, writes the data file
// under a temporary name, fdatasyncs and renames it, then writes the index
// the same way. BM_PlainWriteSync does the same to the data bytes alone
// (write, fdatasync, rename, sync the directory); BM_PlainWrite and
// BM_BundleAddNoSync leave the sync (and the index) out, so that they show
// what the writer costs over the page cache rather than over the disk.
// The plain writes take one write(2) per tensor (piece_mib:16) or one per
// MiB (piece_mib:1, as the bundle writer does): on the 6.x kernel these
// were measured on, single 16 MiB writes into the page cache took anywhere
// from 60 to 800 ms for the 256 MiB, depending on what ran before; 1 MiB
// writes a steady 61 ms.
//
// Restore: the reader allocates every tensor and checks its checksum.
// BM_PlainRead reads into one buffer that is reused (and so already
// mapped); BM_PlainReadFreshBuffers allocates a buffer per tensor per
// round from the same allocator, as a restore must. Every tensor-sized
// allocation is a fresh mapping (mallopt below), as in a process that
// restores its variables at start-up: left to itself, glibc's adaptive
// mmap threshold makes whether a round reuses the last round's pages
// depend on what ran before. `cold` evicts the files from the page cache
// first (posix_fadvise after they were synced), so the disk is read.
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "graph/allocator.h"
#include "graph/tensor.h"
#include "io/bundle_reader.h"
#include "io/bundle_writer.h"
#include "io/crc32c.h"

namespace rill {
namespace {

constexpr int kTensors = 16;
constexpr int64_t kTensorElements = (16 << 20) / sizeof(float);
constexpr size_t kTensorBytes = kTensorElements * sizeof(float);
constexpr int64_t kTotalBytes = int64_t{kTensors} * kTensorBytes;

std::string& BenchDir() {
  static std::string dir;
  return dir;
}

std::string TensorName(int i) { return "layer_" + std::to_string(i) + "/kernel"; }

// Random, non-zero floats, made once.
const std::vector<Tensor>& Variables() {
  static const std::vector<Tensor> variables = [] {
    std::vector<Tensor> out;
    std::mt19937 random(42);
    for (int i = 0; i < kTensors; ++i) {
      Tensor t(DT_FLOAT, TensorShape({kTensorElements / 1024, 1024}));
      float* v = t.data<float>();
      for (int64_t j = 0; j < kTensorElements; ++j) {
        v[j] = 0.5f + static_cast<float>(random() >> 8) * (1.0f / (1 << 24));
      }
      out.push_back(std::move(t));
    }
    return out;
  }();
  return variables;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "checkpoint_bench: %s: %s\n", what, std::strerror(errno));
    std::abort();
  }
}

void Check(const absl::Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "checkpoint_bench: %s\n", status.ToString().c_str());
    std::abort();
  }
}

void WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t written = write(fd, data, n);
    Check(written > 0, "write");
    data += written;
    n -= static_cast<size_t>(written);
  }
}

void ReadAll(int fd, char* data, size_t n) {
  while (n > 0) {
    const ssize_t got = read(fd, data, n);
    Check(got > 0, "read");
    data += got;
    n -= static_cast<size_t>(got);
  }
}

void SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  Check(fd >= 0 && fsync(fd) == 0 && close(fd) == 0, "sync directory");
}

// Writes every variable's bytes to `path` as one file, `piece` bytes per
// write(2): under a temporary name, synced and renamed when `sync`.
void PlainWrite(const std::string& path, bool sync, size_t piece) {
  const std::string temp = sync ? path + ".tmp" : path;
  const int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  Check(fd >= 0, "open for writing");
  for (const Tensor& t : Variables()) {
    const char* data = static_cast<const char*>(t.raw_data());
    for (size_t done = 0; done < kTensorBytes; done += piece) {
      WriteAll(fd, data + done, std::min(piece, kTensorBytes - done));
    }
  }
  if (sync) Check(fdatasync(fd) == 0, "fdatasync");
  Check(close(fd) == 0, "close");
  if (sync) {
    Check(rename(temp.c_str(), path.c_str()) == 0, "rename");
    SyncDirectory(BenchDir());
  }
}

void SaveBundle(const std::string& prefix) {
  auto writer = io::BundleWriter::Create(prefix);
  Check(writer.status());
  for (int i = 0; i < kTensors; ++i) Check((*writer)->Add(TensorName(i), Variables()[i]));
  Check((*writer)->Finish());
}

void RemoveMatching(const std::string& stem) {
  for (const auto& entry : std::filesystem::directory_iterator(BenchDir())) {
    if (entry.path().filename().string().starts_with(stem)) std::filesystem::remove(entry.path());
  }
}

// Drops a synced file's pages from the page cache.
void Evict(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  Check(fd >= 0, "open to evict");
  Check(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0, "posix_fadvise");
  close(fd);
}

// The files the restores read, written once.
const std::string& RestorePrefix() {
  static const std::string prefix = [] {
    const std::string p = BenchDir() + "/restore";
    SaveBundle(p);
    PlainWrite(BenchDir() + "/restore.plain", true, kTensorBytes);
    return p;
  }();
  return prefix;
}

void SetBandwidth(benchmark::State& state) {
  state.SetBytesProcessed(state.iterations() * kTotalBytes);
}

void BM_BundleSave(benchmark::State& state) {
  Variables();
  const std::string prefix = BenchDir() + "/save";
  for (auto _ : state) {
    SaveBundle(prefix);
    state.PauseTiming();
    RemoveMatching("save");
    state.ResumeTiming();
  }
  SetBandwidth(state);
}

// The same bytes with write(2) in pieces of range(0) MiB, synced or not.
void PlainWriteLoop(benchmark::State& state, bool sync, const std::string& name) {
  const size_t piece = static_cast<size_t>(state.range(0)) << 20;
  Variables();
  const std::string path = BenchDir() + "/" + name;
  for (auto _ : state) {
    PlainWrite(path, sync, piece);
    state.PauseTiming();
    RemoveMatching(name);
    state.ResumeTiming();
  }
  SetBandwidth(state);
}

void BM_PlainWriteSync(benchmark::State& state) { PlainWriteLoop(state, true, "plain_sync"); }

// The writer's Add calls (checksums and writes into the page cache), with
// no Finish: destroying the writer removes its temporary file.
void BM_BundleAddNoSync(benchmark::State& state) {
  Variables();
  const std::string prefix = BenchDir() + "/nosync";
  for (auto _ : state) {
    auto writer = io::BundleWriter::Create(prefix);
    Check(writer.status());
    for (int i = 0; i < kTensors; ++i) Check((*writer)->Add(TensorName(i), Variables()[i]));
    state.PauseTiming();
    writer->reset();
    RemoveMatching("nosync");
    state.ResumeTiming();
  }
  SetBandwidth(state);
}

void BM_PlainWrite(benchmark::State& state) { PlainWriteLoop(state, false, "plain_nosync"); }

void BM_BundleRestore(benchmark::State& state) {
  const bool cold = state.range(0) != 0;
  const std::string& prefix = RestorePrefix();
  const std::string data = prefix + ".data-00000-of-00001";
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      Evict(data);
      Evict(prefix + ".index");
      state.ResumeTiming();
    }
    auto reader = io::BundleReader::Open(prefix);
    Check(reader.status());
    std::vector<Tensor> restored;
    for (int i = 0; i < kTensors; ++i) {
      absl::StatusOr<Tensor> t = (*reader)->Read(TensorName(i));
      Check(t.status());
      restored.push_back(*std::move(t));
    }
    benchmark::DoNotOptimize(restored.data());
    state.PauseTiming();
    restored.clear();  // Freeing is not part of a restore.
    state.ResumeTiming();
  }
  SetBandwidth(state);
}

void BM_PlainRead(benchmark::State& state) {
  const bool cold = state.range(0) != 0;
  const std::string path = RestorePrefix() + ".plain";
  std::vector<char> buffer(kTotalBytes, 1);  // Mapped once, reused.
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      Evict(path);
      state.ResumeTiming();
    }
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    Check(fd >= 0, "open for reading");
    for (int i = 0; i < kTensors; ++i) ReadAll(fd, buffer.data() + i * kTensorBytes, kTensorBytes);
    close(fd);
    benchmark::DoNotOptimize(buffer.data());
  }
  SetBandwidth(state);
}

void BM_PlainReadFreshBuffers(benchmark::State& state) {
  const bool cold = state.range(0) != 0;
  const std::string path = RestorePrefix() + ".plain";
  Allocator* allocator = CpuAllocator();
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      Evict(path);
      state.ResumeTiming();
    }
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    Check(fd >= 0, "open for reading");
    std::vector<void*> buffers;
    for (int i = 0; i < kTensors; ++i) {
      buffers.push_back(allocator->AllocateRaw(kTensorAlignment, kTensorBytes));
      ReadAll(fd, static_cast<char*>(buffers.back()), kTensorBytes);
    }
    close(fd);
    benchmark::DoNotOptimize(buffers.data());
    state.PauseTiming();
    for (void* b : buffers) allocator->DeallocateRaw(b, kTensorBytes);
    state.ResumeTiming();
  }
  SetBandwidth(state);
}

// The checksum alone, over a buffer that stays in the L2 cache and over a
// whole 16 MiB tensor.
void BM_Crc32c(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const char* data = static_cast<const char*>(Variables()[0].raw_data());
  for (auto _ : state) benchmark::DoNotOptimize(crc32c::Value(data, bytes));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

BENCHMARK(BM_Crc32c)->Arg(256 << 10)->Arg(kTensorBytes);
BENCHMARK(BM_BundleSave)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainWriteSync)
    ->ArgName("piece_mib")
    ->Arg(16)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_BundleAddNoSync)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PlainWrite)
    ->ArgName("piece_mib")
    ->Arg(16)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_BundleRestore)
    ->ArgName("cold")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_PlainRead)
    ->ArgName("cold")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_PlainReadFreshBuffers)
    ->ArgName("cold")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const char* tmp = std::getenv("TMPDIR");
  std::string dir =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/checkpoint_bench.XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) {
    std::perror("checkpoint_bench: mkdtemp");
    return 1;
  }
  rill::BenchDir() = dir;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::filesystem::remove_all(dir);
  return 0;
}
