// TensorFlow's sync_replicas_optimizer_test.py (test2Workers and
// test3Workers1Backup), ported as TensorFlow writes it: 2 ps tasks, each
// variable pinned to one by a device scope; each worker's replica built
// under /job:worker/task:i with no device setter;
// SyncReplicasOptimizer(GradientDescentOptimizer(2.0)); one
// MonitoredTrainingSession per worker, worker 0 the chief. Every value
// TensorFlow asserts is asserted here. Two differences, both of rill's
// API: the global step is int64 (rill's SyncReplicasOptimizer takes no
// other), and v_sparse's gradient is given dense ([[0], [g]] for TF's
// IndexedSlices of row 1), which applies the same update.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "ops/uninitialized_variables.h"
#include "ops/variable.h"
#include "runtime/distributed/server.h"
#include "runtime/training/monitored_session.h"
#include "runtime/training/optimizer.h"
#include "runtime/training/sync_replicas_optimizer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::QuietLog;

struct Worker {
  std::unique_ptr<GradientDescentOptimizer> sgd;
  std::unique_ptr<SyncReplicasOptimizer> sync;
  std::unique_ptr<MonitoredSession> session;
  std::string train_op;
};

// TensorFlow's get_workers: builds worker `id`'s graph and opens its
// monitored session on its own task.
absl::StatusOr<Worker> MakeWorker(int id, int num_workers, int replicas_to_aggregate,
                                  const std::string& target) {
  const bool is_chief = id == 0;
  const Scope root = ops::NewRootScope();
  const Scope ps0 = root.WithDevice("/job:ps/task:0");
  const Variable global_step(ps0, "global_step", Tensor::Scalar<int64_t>(0));
  const Variable var_0(ps0, "v0", Tensor::Scalar<float>(0.0f));
  const Scope ps1 = root.WithDevice("/job:ps/task:1");
  const Variable var_1(ps1, "v1", Tensor::Scalar<float>(1.0f));
  const Variable var_sparse(ps1, "v_sparse",
                            Tensor::FromVector<float>({3.0f, 4.0f}, TensorShape({2, 1})));

  const Scope worker = root.WithDevice(absl::StrFormat("/job:worker/task:%d", id));
  const ops::Const grads_0(worker, Tensor::Scalar<float>(0.1f + id * 0.2f), DT_FLOAT);
  const ops::Const grads_1(worker, Tensor::Scalar<float>(0.9f + id * 0.2f), DT_FLOAT);
  const ops::Const grads_sparse(
      worker, Tensor::FromVector<float>({0.0f, 0.1f + id * 0.2f}, TensorShape({2, 1})), DT_FLOAT);
  Worker out;
  out.sgd = std::make_unique<GradientDescentOptimizer>(2.0f);
  SyncReplicasOptions options;
  options.replicas_to_aggregate = replicas_to_aggregate;
  options.total_num_replicas = num_workers;
  out.sync = std::make_unique<SyncReplicasOptimizer>(out.sgd.get(), options);
  ASSIGN_OR_RETURN(
      const Operation train_op,
      out.sync->ApplyGradients(
          worker, {{grads_0, var_0}, {grads_1, var_1}, {grads_sparse, var_sparse}}, global_step));
  out.train_op = train_op.node()->name();
  ASSIGN_OR_RETURN(std::unique_ptr<SessionRunHook> hook,
                   out.sync->MakeSessionRunHook(is_chief, /*num_tokens=*/num_workers));

  // MonitoredTrainingSession's default scaffold: the global variables
  // initialized and checked by the chief; the local step each worker's.
  std::vector<Output> global_variables;
  for (const Output& variable : AllVariables(root)) {
    if (variable.node() != out.sync->local_step().ref().node()) {
      global_variables.push_back(variable);
    }
  }
  Scaffold scaffold;
  scaffold.init_op = GlobalVariablesInitializer(root).node()->name();
  ASSIGN_OR_RETURN(const Output ready, ReportUninitializedVariables(root, global_variables));
  scaffold.ready_op = ready.node()->name();
  scaffold.ready_for_local_init_op = out.sync->names().ready_for_local_init_op;
  scaffold.local_init_op = out.sync->names().local_step_init_op;
  scaffold.global_step = global_step.ref().name();
  ASSIGN_OR_RETURN(GraphDef graph, root.ToGraphDef());

  MonitoredTrainingSessionOptions session_options;
  session_options.is_chief = is_chief;
  session_options.manager.session_options.target = target;
  session_options.manager.recovery_wait = absl::Milliseconds(50);
  session_options.log = QuietLog();
  session_options.log_step_count_steps = 0;
  session_options.hooks.push_back(std::move(hook));
  ASSIGN_OR_RETURN(out.session, NewMonitoredTrainingSession(std::move(graph), std::move(scaffold),
                                                            std::move(session_options)));
  return out;
}

class TfSyncReplicas : public ::testing::Test {
 protected:
  void StartWorkers(int num_workers, int replicas_to_aggregate) {
    ServerOptions options;
    options.log = QuietLog();
    ASSERT_OK_AND_ASSIGN(servers_,
                         Server::CreateLocalCluster({{"worker", num_workers}, {"ps", 2}}, options));
    for (int id = 0; id < num_workers; ++id) {
      ASSERT_OK_AND_ASSIGN(Worker worker, MakeWorker(id, num_workers, replicas_to_aggregate,
                                                     servers_[id]->target()));
      workers_.push_back(std::move(worker));
    }
  }

  void TearDown() override {
    for (Worker& worker : workers_) EXPECT_OK(worker.session->Close());
  }

  // A tensor by name, read through worker `id`'s session.
  Tensor Get(int id, const std::string& name) {
    absl::StatusOr<std::vector<Tensor>> out = workers_[id].session->Run({}, {name});
    EXPECT_OK(out);
    return out.ok() ? out->at(0) : Tensor();
  }
  float Float(int id, const std::string& name) { return Get(id, name).data<float>()[0]; }
  int64_t Int(int id, const std::string& name) { return Get(id, name).data<int64_t>()[0]; }
  void Train(int id) { EXPECT_OK(workers_[id].session->Run({}, {}, {workers_[id].train_op})); }
  void WaitForGlobalStep(int id, int64_t step) {
    while (Int(id, "global_step:0") != step) absl::SleepFor(absl::Milliseconds(10));
  }

  std::vector<std::unique_ptr<Server>> servers_;
  std::vector<Worker> workers_;
};

TEST_F(TfSyncReplicas, test2Workers) {
  StartWorkers(/*num_workers=*/2, /*replicas_to_aggregate=*/2);
  // The chief initialized every variable.
  EXPECT_FLOAT_EQ(Float(0, "v0:0"), 0.0f);
  EXPECT_FLOAT_EQ(Float(0, "v1:0"), 1.0f);
  EXPECT_EQ(Int(0, "sync_rep_local_step:0"), 0);
  // The steps are initialized too.
  EXPECT_EQ(Int(1, "global_step:0"), 0);
  EXPECT_EQ(Int(1, "sync_rep_local_step:0"), 0);
  EXPECT_THAT(testing::Values<float>(Get(1, "v_sparse:0")), ::testing::ElementsAre(3.0f, 4.0f));

  // The initial tokens let the workers take one step each, one after the
  // other.
  Train(0);
  Train(1);
  // The mean of the gradients is applied once both arrived.
  WaitForGlobalStep(1, 1);
  EXPECT_NEAR(Float(1, "v0:0"), 0 - (0.1 + 0.3) / 2 * 2.0, 1e-6);
  EXPECT_NEAR(Float(1, "v1:0"), 1 - (0.9 + 1.1) / 2 * 2.0, 1e-6);
  EXPECT_THAT(testing::Values<float>(Get(1, "v_sparse:0")),
              ::testing::ElementsAre(::testing::FloatNear(3.0f, 1e-6),
                                     ::testing::FloatNear(4.0 - (0.1 + 0.3) / 2 * 2.0, 1e-6)));
  // The initial tokens carry step 0, so both workers' local steps are 0
  // and their next gradients are stale.
  EXPECT_EQ(Int(0, "sync_rep_local_step:0"), 0);
  EXPECT_EQ(Int(1, "sync_rep_local_step:0"), 0);

  Train(0);
  Train(1);
  // The global step is still 1, the local steps are now 1, the variables
  // the same.
  EXPECT_EQ(Int(1, "global_step:0"), 1);
  EXPECT_EQ(Int(0, "sync_rep_local_step:0"), 1);
  EXPECT_EQ(Int(1, "sync_rep_local_step:0"), 1);
  EXPECT_NEAR(Float(1, "v0:0"), 0 - (0.1 + 0.3) / 2 * 2.0, 1e-6);
  EXPECT_NEAR(Float(1, "v1:0"), 1 - (0.9 + 1.1) / 2 * 2.0, 1e-6);

  // No tokens are left: the two workers must step together.
  std::thread first([&] { Train(0); });
  std::thread second([&] { Train(1); });
  first.join();
  second.join();
  EXPECT_EQ(Int(1, "global_step:0"), 2);
  EXPECT_NEAR(Float(1, "v0:0"), 0 - 2 * (0.1 + 0.3) / 2 * 2.0, 1e-6);
  EXPECT_NEAR(Float(1, "v1:0"), 1 - 2 * (0.9 + 1.1) / 2 * 2.0, 1e-6);
}

// Three workers, one of them a backup.
TEST_F(TfSyncReplicas, test3Workers1Backup) {
  StartWorkers(/*num_workers=*/3, /*replicas_to_aggregate=*/2);
  EXPECT_EQ(Int(1, "global_step:0"), 0);
  EXPECT_EQ(Int(1, "sync_rep_local_step:0"), 0);

  // Workers 0 and 2 finish first: their two gradients make the round.
  Train(0);
  Train(2);
  WaitForGlobalStep(1, 1);
  EXPECT_EQ(Int(1, "global_step:0"), 1);
  EXPECT_NEAR(Float(1, "v0:0"), 0 - (0.1 + 0.5) / 2 * 2.0, 1e-6);
  EXPECT_NEAR(Float(1, "v1:0"), 1 - (0.9 + 1.3) / 2 * 2.0, 1e-6);

  // Worker 1's late gradient is stale and dropped.
  Train(1);
  // Every local step is still 0, so these are dropped too.
  Train(0);
  Train(1);
  Train(2);
  EXPECT_EQ(Int(1, "global_step:0"), 1);
  EXPECT_EQ(Int(1, "sync_rep_local_step:0"), 1);

  // Worker 0 goes first and waits, as the round needs two gradients.
  std::thread first([&] { Train(0); });
  EXPECT_EQ(Int(1, "global_step:0"), 1);
  std::thread second([&] { Train(1); });
  second.join();
  first.join();
  EXPECT_EQ(Int(1, "global_step:0"), 2);
  EXPECT_NEAR(Float(1, "v0:0"), -0.6 - (0.1 + 0.3) / 2 * 2.0, 1e-6);
  EXPECT_NEAR(Float(1, "v1:0"), -1.2 - (0.9 + 1.1) / 2 * 2.0, 1e-6);
}

}  // namespace
}  // namespace rill
