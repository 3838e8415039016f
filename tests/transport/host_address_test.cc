#include "transport/host_address.h"

#include <net/if.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

TEST(BindableHost, KeepsAddressesAndMapsLocalhost) {
  EXPECT_THAT(BindableHost("localhost"), IsOkAndHolds("127.0.0.1"));
  for (const std::string host : {"127.0.0.1", "0.0.0.0", "10.1.2.3", "[::1]", "*"}) {
    EXPECT_THAT(BindableHost(host), IsOkAndHolds(host));
  }
}

TEST(BindableHost, KeepsInterfaceNames) {
  if (if_nametoindex("lo") == 0) GTEST_SKIP() << "no interface 'lo'";
  EXPECT_THAT(BindableHost("lo"), IsOkAndHolds("lo"));
}

// Names under .invalid are refused without asking a resolver (RFC 6761).
TEST(BindableHost, ANameThatCannotResolveIsNamed) {
  for (const std::string host : {"nosuchhost.invalid", "a.b.INVALID", "x.invalid."}) {
    EXPECT_THAT(BindableHost(host), StatusIs(absl::StatusCode::kInvalidArgument,
                                             HasSubstr("cannot resolve host '" + host + "'")));
  }
}

}  // namespace
}  // namespace rill
