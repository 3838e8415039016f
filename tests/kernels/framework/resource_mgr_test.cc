#include "kernels/framework/resource_mgr.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

class Counter : public ResourceBase {
 public:
  static constexpr char kTypeName[] = "Counter";
  std::string DebugString() const override { return "Counter"; }
};

std::function<absl::StatusOr<std::shared_ptr<Var>>()> MakeVar(DataType dtype, int* calls) {
  return [dtype, calls]() -> absl::StatusOr<std::shared_ptr<Var>> {
    ++*calls;
    return std::make_shared<Var>(dtype);
  };
}

TEST(ResourceMgr, LookupOrCreateCreatesOnceAndReturnsTheSameResource) {
  ResourceMgr resources;
  int calls = 0;
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Var> a,
                       resources.LookupOrCreate<Var>("c", "w", MakeVar(DT_FLOAT, &calls)));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Var> b,
                       resources.LookupOrCreate<Var>("c", "w", MakeVar(DT_DOUBLE, &calls)));
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(b->dtype(), DT_FLOAT);
  EXPECT_EQ(calls, 1);
}

TEST(ResourceMgr, ContainersSeparateResourcesOfTheSameName) {
  ResourceMgr resources;
  int calls = 0;
  ASSERT_OK_AND_ASSIGN(auto a, resources.LookupOrCreate<Var>("c1", "w", MakeVar(DT_FLOAT, &calls)));
  ASSERT_OK_AND_ASSIGN(auto b, resources.LookupOrCreate<Var>("c2", "w", MakeVar(DT_FLOAT, &calls)));
  EXPECT_NE(a.get(), b.get());
  EXPECT_EQ(calls, 2);
}

TEST(ResourceMgr, LookupOfAMissingResourceIsNotFoundNamingIt) {
  ResourceMgr resources;
  EXPECT_THAT(resources.Lookup<Var>("c", "w"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("c/w")));
}

TEST(ResourceMgr, LookupWithAnotherTypeIsFailedPrecondition) {
  ResourceMgr resources;
  int calls = 0;
  ASSERT_OK(resources.LookupOrCreate<Var>("c", "w", MakeVar(DT_FLOAT, &calls)));
  EXPECT_THAT(resources.Lookup<Counter>("c", "w"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::AllOf(HasSubstr("c/w"), HasSubstr("Var"), HasSubstr("Counter"))));
  EXPECT_THAT(resources.LookupOrCreate<Counter>(
                  "c", "w", [] { return absl::StatusOr<std::shared_ptr<Counter>>(nullptr); }),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("Counter")));
}

TEST(ResourceMgr, CreateErrorIsReturnedAndNothingIsStored) {
  ResourceMgr resources;
  EXPECT_THAT(resources.LookupOrCreate<Var>("c", "w",
                                            []() -> absl::StatusOr<std::shared_ptr<Var>> {
                                              return absl::ResourceExhaustedError("no room");
                                            }),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("no room")));
  EXPECT_THAT(resources.Lookup<Var>("c", "w"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("w")));
}

TEST(ResourceMgr, DeleteRemovesButHoldersKeepTheResource) {
  ResourceMgr resources;
  int calls = 0;
  ASSERT_OK_AND_ASSIGN(auto held,
                       resources.LookupOrCreate<Var>("c", "w", MakeVar(DT_INT32, &calls)));
  ASSERT_OK(resources.Delete("c", "w"));
  EXPECT_THAT(resources.Lookup<Var>("c", "w"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("w")));
  EXPECT_EQ(held->dtype(), DT_INT32);
  EXPECT_THAT(resources.Delete("c", "w"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("c/w")));
}

TEST(ResourceMgr, CleanupDropsOnlyItsContainerAndClearDropsAll) {
  ResourceMgr resources;
  int calls = 0;
  ASSERT_OK(resources.LookupOrCreate<Var>("a", "x", MakeVar(DT_FLOAT, &calls)));
  ASSERT_OK(resources.LookupOrCreate<Var>("a", "y", MakeVar(DT_FLOAT, &calls)));
  ASSERT_OK(resources.LookupOrCreate<Var>("b", "x", MakeVar(DT_FLOAT, &calls)));
  resources.Cleanup("a");
  EXPECT_THAT(resources.Lookup<Var>("a", "x"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("x")));
  EXPECT_THAT(resources.Lookup<Var>("a", "y"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("y")));
  EXPECT_OK(resources.Lookup<Var>("b", "x"));
  resources.Clear();
  EXPECT_THAT(resources.Lookup<Var>("b", "x"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("x")));
}

TEST(ResourceMgr, ConcurrentLookupOrCreateAgreesOnOneResource) {
  ResourceMgr resources;
  std::atomic<int> calls{0};
  std::vector<Var*> seen(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto var =
          resources.LookupOrCreate<Var>("c", "w", [&]() -> absl::StatusOr<std::shared_ptr<Var>> {
            // Relaxed: only the final count is read, after the joins.
            calls.fetch_add(1, std::memory_order_relaxed);
            return std::make_shared<Var>(DT_FLOAT);
          });
      seen[t] = var.ok() ? var->get() : nullptr;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(calls.load(std::memory_order_relaxed), 1);
  for (Var* var : seen) EXPECT_EQ(var, seen[0]);
  EXPECT_NE(seen[0], nullptr);
}

TEST(Var, StartsUninitializedAndDescribesItself) {
  Var var(DT_FLOAT);
  EXPECT_FALSE(var.is_initialized());
  EXPECT_EQ(var.DebugString(), "float uninitialized");
  {
    absl::MutexLock lock(var.mu());
    *var.tensor() = Tensor(DT_FLOAT, TensorShape({2, 3}));
  }
  EXPECT_TRUE(var.is_initialized());
  EXPECT_EQ(var.DebugString(), "float [2,3]");
}

TEST(ResourceHandleTensor, HoldsHandlesThatCopyAndCompare) {
  Tensor handles(DT_RESOURCE, TensorShape({2}));
  handles.data<ResourceHandleProto>()[0].set_container("c");
  handles.data<ResourceHandleProto>()[0].set_name("w");
  handles.data<ResourceHandleProto>()[1].set_name("b");
  const Tensor copy = handles.DeepCopy();
  EXPECT_FALSE(copy.SharesBufferWith(handles));
  EXPECT_EQ(copy.data<ResourceHandleProto>()[0].name(), "w");
  EXPECT_TRUE(TensorsEqual(copy, handles));
  copy.data<ResourceHandleProto>()[1].set_name("other");
  EXPECT_FALSE(TensorsEqual(copy, handles));
  EXPECT_EQ(handles.SummarizeValue(10), "<c/w> </b>");
}

}  // namespace
}  // namespace rill
