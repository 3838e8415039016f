// Runs a fuzz target without libFuzzer, for the test suite: every corpus
// file, then a fixed number of deterministic mutations of each. The suite
// thus replays every crash found so far (kept in the corpus) and looks a
// little around each input on every run; benches/fuzz.sh does the real
// fuzzing with libFuzzer.
//
//   <target> [--mutations=N] [--max_len=BYTES] PATH...
//
// PATH is a corpus directory (its files, not recursively) or a file.
// Mutations: bit flips, byte inserts, deletes and overwrites with
// interesting values, truncation, splicing with another corpus file. A
// crash writes the input that caused it to crash-replay-<pid> in the
// working directory (for `<target> --mutations=0 crash-replay-<pid>`).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional in a target, as with libFuzzer.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

struct CorpusFile {
  std::string path;
  std::string bytes;
};

// What the crash handler writes out: set before each run.
const std::string* current_input = nullptr;
const char* current_origin = "";
long current_mutation = -1;

void WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t written = write(fd, data, n);
    if (written <= 0) return;
    data += written;
    n -= static_cast<size_t>(written);
  }
}

void WriteString(int fd, const char* s) { WriteAll(fd, s, std::strlen(s)); }

// Async-signal-safe: write(2) and open(2) only.
void OnCrash(int signal_number) {
  char name[64] = "crash-replay-";
  char digits[24];
  int n = 0;
  for (long pid = getpid(); pid > 0 && n < 20; pid /= 10)
    digits[n++] = static_cast<char>('0' + pid % 10);
  size_t len = std::strlen(name);
  while (n > 0) name[len++] = digits[--n];
  name[len] = '\0';
  if (current_input != nullptr) {
    const int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      WriteAll(fd, current_input->data(), current_input->size());
      close(fd);
    }
    WriteString(2, "\nreplay: crashed on ");
    WriteString(2, current_origin);
    if (current_mutation >= 0) WriteString(2, " (a mutation of it)");
    WriteString(2, "; the input is in ");
    WriteString(2, name);
    WriteString(2, "\n");
  }
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

// splitmix64: small, fast, and the same on every platform.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// Values that tend to sit on boundaries: lengths, signs, type limits.
constexpr uint8_t kInterestingBytes[] = {0x00, 0x01, 0x02, 0x07, 0x08, 0x10, 0x20, 0x3f,
                                         0x40, 0x7e, 0x7f, 0x80, 0x81, 0xfe, 0xff};

std::string Mutate(const std::string& input, const std::vector<CorpusFile>& corpus, size_t max_len,
                   Random& rng) {
  std::string out = input;
  const size_t steps = 1 + rng.Below(4);
  for (size_t step = 0; step < steps; ++step) {
    switch (rng.Below(7)) {
      case 0:  // Flip one bit.
        if (!out.empty()) out[rng.Below(out.size())] ^= static_cast<char>(1u << rng.Below(8));
        break;
      case 1:  // Overwrite a byte with an interesting value.
        if (!out.empty()) {
          out[rng.Below(out.size())] =
              static_cast<char>(kInterestingBytes[rng.Below(std::size(kInterestingBytes))]);
        }
        break;
      case 2:  // Insert a byte (random or interesting).
        out.insert(
            out.begin() + static_cast<std::ptrdiff_t>(rng.Below(out.size() + 1)),
            rng.Below(2) == 0
                ? static_cast<char>(rng.Next())
                : static_cast<char>(kInterestingBytes[rng.Below(std::size(kInterestingBytes))]));
        break;
      case 3:  // Delete a run of bytes.
        if (!out.empty()) {
          const size_t at = rng.Below(out.size());
          out.erase(at, 1 + rng.Below(std::min<size_t>(8, out.size() - at)));
        }
        break;
      case 4:  // Truncate.
        out.resize(rng.Below(out.size() + 1));
        break;
      case 5: {  // Splice: a prefix of this input, a suffix of another.
        const std::string& other = corpus[rng.Below(corpus.size())].bytes;
        out = out.substr(0, rng.Below(out.size() + 1)) + other.substr(rng.Below(other.size() + 1));
        break;
      }
      case 6:  // Overwrite 4 bytes with an extreme 32-bit value.
        if (out.size() >= 4) {
          constexpr uint32_t kValues[] = {0, 1, 0x7fffffffu, 0x80000000u, 0xffffffffu, 0x10000u};
          const uint32_t v = kValues[rng.Below(std::size(kValues))];
          std::memcpy(&out[rng.Below(out.size() - 3)], &v, 4);
        }
        break;
    }
  }
  if (out.size() > max_len) out.resize(max_len);
  return out;
}

bool ReadFile(const std::filesystem::path& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

void Run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 20;
  size_t max_len = 1 << 20;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--mutations=")) {
      mutations = std::strtol(argv[i] + std::strlen("--mutations="), nullptr, 10);
    } else if (arg.starts_with("--max_len=")) {
      max_len = std::strtoul(argv[i] + std::strlen("--max_len="), nullptr, 10);
    } else if (arg.starts_with("--")) {
      std::fprintf(stderr, "replay: unknown option %s\n", argv[i]);
      return 2;
    } else {
      paths.emplace_back(arg);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: %s [--mutations=N] [--max_len=BYTES] CORPUS_DIR_OR_FILE...\n",
                 argv[0]);
    return 2;
  }
  std::vector<CorpusFile> corpus;
  for (const std::string& path : paths) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(path)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());  // The same order, so the same mutations.
      for (const auto& file : files) {
        CorpusFile& added = corpus.emplace_back();
        added.path = file.string();
        if (!ReadFile(file, &added.bytes)) {
          std::fprintf(stderr, "replay: cannot read %s\n", added.path.c_str());
          return 2;
        }
      }
    } else {
      CorpusFile& added = corpus.emplace_back();
      added.path = path;
      if (!ReadFile(path, &added.bytes)) {
        std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
        return 2;
      }
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "replay: no corpus files in the paths given\n");
    return 2;
  }
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  for (int s : {SIGSEGV, SIGABRT, SIGFPE, SIGILL, SIGBUS}) signal(s, OnCrash);

  const auto start = std::chrono::steady_clock::now();
  long runs = 0;
  for (const CorpusFile& file : corpus) {
    current_origin = file.path.c_str();
    current_mutation = -1;
    current_input = &file.bytes;
    Run(file.bytes);
    ++runs;
    // Seeded by the file's name, so that adding a file does not change the
    // mutations of the others.
    Random rng(Fnv1a(std::filesystem::path(file.path).filename().string()));
    for (long m = 0; m < mutations; ++m) {
      const std::string mutated = Mutate(file.bytes, corpus, max_len, rng);
      current_mutation = m;
      current_input = &mutated;
      Run(mutated);
      ++runs;
    }
    current_input = nullptr;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("replay: %ld inputs (%zu corpus files, %ld mutations each) in %.2f s\n", runs,
              corpus.size(), mutations, seconds);
  return 0;
}
