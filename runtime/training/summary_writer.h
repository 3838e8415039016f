// SummaryWriter writes a TensorBoard event file, as tf.summary.FileWriter:
// events are queued and flushed in batches, and at least every flush interval.
#ifndef RILL_RUNTIME_TRAINING_SUMMARY_WRITER_H_
#define RILL_RUNTIME_TRAINING_SUMMARY_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "graph/proto/event.pb.h"
#include "graph/proto/graph.pb.h"
#include "graph/proto/summary.pb.h"
#include "io/record_writer.h"

namespace rill {

struct SummaryWriterOptions {
  // Pending events that make the adding call write and flush them all
  // (1 or less: every event at once).
  int max_queue = 10;
  // How long a pending event may wait before a background thread flushes it.
  absl::Duration flush_interval = absl::Seconds(120);
  // Appended to the file name (TensorFlow's filename_suffix).
  std::string filename_suffix;
  // The directory and the event file are made and written through it; it
  // must outlive the writer.
  io::Env* env = io::Env::Default();
};

// Events reach the file in the order they were queued (for one thread,
// the order of its calls). A flush writes the pending events and syncs the file (fsync).
// An I/O error, on whichever thread it happens, is returned by that call
// and by every later one; the events pending then are lost.
//
// Thread safety: all methods may be called concurrently.
class SummaryWriter {
 public:
  // Creates `logdir` if missing and, in it, the file
  //   events.out.tfevents.<unix seconds, %010lld>.<gethostname()><suffix>
  // whose first record, synced (with the file's name) before this returns,
  // is Event{wall_time: now in whole seconds, file_version:
  // "brain.Event:2"}. ALREADY_EXISTS when
  // another writer made that file in the same second (give one of them a
  // filename_suffix): an event file is never appended to or overwritten.
  static absl::StatusOr<std::unique_ptr<SummaryWriter>> Create(const std::string& logdir,
                                                               SummaryWriterOptions options = {});
  // Close(); its error is lost, so call Close() to see it.
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter&) = delete;
  SummaryWriter& operator=(const SummaryWriter&) = delete;

  const std::string& path() const { return path_; }

  // Queues `event` as it is. FAILED_PRECONDITION after Close.
  absl::Status WriteEvent(const Event& event);

  // The methods below queue an Event with wall_time now (fractional
  // seconds, as Python's time.time()) and the given step.
  absl::Status AddSummary(const Summary& summary, int64_t step);
  // `serialized` as a summary op outputs it; INVALID_ARGUMENT when it does
  // not parse as a Summary.
  absl::Status AddSummary(std::string_view serialized, int64_t step);
  // Summary{value{tag, simple_value}}; TensorBoard's scalars.
  absl::Status AddScalar(const std::string& tag, float value, int64_t step);
  // Summary{value{tag, histo}} over TensorFlow's default buckets.
  // INVALID_ARGUMENT for a NaN or infinite value, as HistogramSummary.
  absl::Status AddHistogram(const std::string& tag, absl::Span<const double> values, int64_t step);
  // Event.graph_def (step 0), which TensorBoard draws.
  absl::Status AddGraph(const GraphDef& graph);
  // A START at step S makes TensorBoard drop what it loaded at steps >= S.
  absl::Status AddSessionLog(const SessionLog& log, int64_t step);
  absl::Status AddSessionLog(SessionLog::SessionStatus status, int64_t step);

  // Writes and syncs the pending events.
  absl::Status Flush();
  // Flush, stop the background thread and close the file. After it, Flush
  // and Close return the first error (or OK) and the other calls fail.
  absl::Status Close();

 private:
  SummaryWriter(std::string path, std::unique_ptr<RecordWriter> writer,
                const SummaryWriterOptions& options);

  absl::Status Enqueue(std::string record) ABSL_LOCKS_EXCLUDED(io_mu_, mu_);
  // Writes and syncs whatever is pending; records an error in status_.
  absl::Status WritePending() ABSL_LOCKS_EXCLUDED(io_mu_, mu_);
  void FlushLoop() ABSL_LOCKS_EXCLUDED(io_mu_, mu_);

  // Constant after construction.
  const std::string path_;
  const size_t max_queue_;
  const absl::Duration flush_interval_;

  // Lock order: close_mu_, then io_mu_, then mu_. mu_ is never held during
  // I/O, so adding an event does not wait for a flush in progress.
  absl::Mutex close_mu_;  // Makes a second Close wait for the first.
  absl::Mutex io_mu_;     // Serializes batches, so that they stay in order.
  std::unique_ptr<RecordWriter> writer_ ABSL_GUARDED_BY(io_mu_);

  absl::Mutex mu_;
  std::vector<std::string> pending_ ABSL_GUARDED_BY(mu_);  // Serialized events.
  absl::Status status_ ABSL_GUARDED_BY(mu_);               // The first I/O error.
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time next_flush_ ABSL_GUARDED_BY(mu_);
  absl::CondVar wake_flusher_;  // Signalled on Close.

  std::thread flusher_;  // Runs FlushLoop until Close.
};

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_SUMMARY_WRITER_H_
