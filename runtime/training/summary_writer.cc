#include "runtime/training/summary_writer.h"

#include <unistd.h>

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "io/histogram.h"
#include "io/posix_file.h"

namespace rill {
namespace {

constexpr char kFileVersion[] = "brain.Event:2";

std::string Hostname() {
  char name[256] = {};
  // Truncated names are not NUL-terminated; the last byte stays 0.
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

double WallTime() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

Event EventAt(int64_t step) {
  Event event;
  event.set_wall_time(WallTime());
  event.set_step(step);
  return event;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SummaryWriter>> SummaryWriter::Create(const std::string& logdir,
                                                                     SummaryWriterOptions options) {
  RETURN_IF_ERROR(io::CreateDirectories(logdir, options.env));
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  const std::string path =
      absl::StrFormat("%s%sevents.out.tfevents.%010d.%s%s", logdir,
                      logdir.ends_with('/') ? "" : "/", now, Hostname(), options.filename_suffix);
  ASSIGN_OR_RETURN(std::unique_ptr<RecordWriter> writer,
                   RecordWriter::Open(path, io::WriteMode::kCreateNew, options.env));
  // TensorBoard reads the version first; it is on disk before any event.
  Event version;
  version.set_wall_time(static_cast<double>(now));
  version.set_file_version(kFileVersion);
  RETURN_IF_ERROR(writer->WriteRecord(version.SerializeAsString()));
  RETURN_IF_ERROR(writer->Flush());
  // The file's name is durable too, so that what a Flush syncs later is
  // found after a crash.
  RETURN_IF_ERROR(options.env->SyncDir(logdir));
  return std::unique_ptr<SummaryWriter>(new SummaryWriter(path, std::move(writer), options));
}

SummaryWriter::SummaryWriter(std::string path, std::unique_ptr<RecordWriter> writer,
                             const SummaryWriterOptions& options)
    : path_(std::move(path)),
      max_queue_(options.max_queue < 1 ? 1 : static_cast<size_t>(options.max_queue)),
      flush_interval_(options.flush_interval),
      writer_(std::move(writer)),
      next_flush_(absl::Now() + options.flush_interval) {
  flusher_ = std::thread([this] { FlushLoop(); });
}

SummaryWriter::~SummaryWriter() { Close().IgnoreError(); }

absl::Status SummaryWriter::WriteEvent(const Event& event) {
  return Enqueue(event.SerializeAsString());
}

absl::Status SummaryWriter::AddSummary(const Summary& summary, int64_t step) {
  Event event = EventAt(step);
  *event.mutable_summary() = summary;
  return WriteEvent(event);
}

absl::Status SummaryWriter::AddSummary(std::string_view serialized, int64_t step) {
  Event event = EventAt(step);
  if (!event.mutable_summary()->ParseFromArray(serialized.data(),
                                               static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": cannot add a summary that does not parse as a Summary"));
  }
  return WriteEvent(event);
}

absl::Status SummaryWriter::AddScalar(const std::string& tag, float value, int64_t step) {
  Event event = EventAt(step);
  Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return WriteEvent(event);
}

absl::Status SummaryWriter::AddHistogram(const std::string& tag, absl::Span<const double> values,
                                         int64_t step) {
  Histogram histogram;
  for (double v : values) {
    if (std::isnan(v)) {
      return absl::InvalidArgumentError(absl::StrCat("Nan in summary histogram for: ", tag));
    }
    if (std::isinf(v)) {
      return absl::InvalidArgumentError(absl::StrCat("Infinity in summary histogram for: ", tag));
    }
    histogram.Add(v);
  }
  Event event = EventAt(step);
  Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  histogram.EncodeToProto(v->mutable_histo());
  return WriteEvent(event);
}

absl::Status SummaryWriter::AddGraph(const GraphDef& graph) {
  Event event;
  event.set_wall_time(WallTime());
  event.set_graph_def(graph.SerializeAsString());
  return WriteEvent(event);
}

absl::Status SummaryWriter::AddSessionLog(const SessionLog& log, int64_t step) {
  Event event = EventAt(step);
  *event.mutable_session_log() = log;
  return WriteEvent(event);
}

absl::Status SummaryWriter::AddSessionLog(SessionLog::SessionStatus status, int64_t step) {
  SessionLog log;
  log.set_status(status);
  return AddSessionLog(log, step);
}

absl::Status SummaryWriter::Enqueue(std::string record) {
  bool full;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      return absl::FailedPreconditionError(absl::StrCat(path_, ": summary writer is closed"));
    }
    RETURN_IF_ERROR(status_);
    pending_.push_back(std::move(record));
    full = pending_.size() >= max_queue_;
  }
  return full ? WritePending() : absl::OkStatus();
}

absl::Status SummaryWriter::WritePending() {
  absl::MutexLock io_lock(&io_mu_);
  std::vector<std::string> batch;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(status_);
    batch.swap(pending_);
    next_flush_ = absl::Now() + flush_interval_;
  }
  // Every earlier batch was synced when it was written.
  if (batch.empty()) return absl::OkStatus();
  absl::Status status;
  for (const std::string& record : batch) {
    status = writer_->WriteRecord(record);
    if (!status.ok()) break;
  }
  if (status.ok()) status = writer_->Flush();
  if (!status.ok()) {
    absl::MutexLock lock(&mu_);
    status_.Update(status);
  }
  return status;
}

absl::Status SummaryWriter::Flush() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return status_;
  }
  return WritePending();
}

absl::Status SummaryWriter::Close() {
  absl::MutexLock close_lock(&close_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return status_;
    closed_ = true;
    wake_flusher_.Signal();
  }
  flusher_.join();
  // Events queued before closed_ was set are still pending.
  absl::Status status = WritePending();
  absl::MutexLock io_lock(&io_mu_);
  status.Update(writer_->Close());
  absl::MutexLock lock(&mu_);
  status_.Update(status);
  return status_;
}

void SummaryWriter::FlushLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      while (!closed_ && absl::Now() < next_flush_) {
        wake_flusher_.WaitWithDeadline(&mu_, next_flush_);
      }
      if (closed_) return;
      // Not again before the next interval, even if this flush fails.
      next_flush_ = absl::Now() + flush_interval_;
    }
    // A failure is kept in status_ for the callers to see.
    WritePending().IgnoreError();
  }
}

}  // namespace rill
