// The headers nearly every test includes, compiled once into a precompiled
// header that each test program's compilation loads instead of parsing them.
//
// Parsing Eigen's Tensor module, GoogleTest, gmock and Abseil was a third of
// each test's compile time, and the tests are half of the build on CI's two
// cores. Only headers every test can see belong here (graph/ and the
// third-party ones): a test includes the rest itself, and every test still
// includes what it uses, so it compiles the same without this file.
#ifndef RILL_TESTS_TEST_PCH_H_
#define RILL_TESTS_TEST_PCH_H_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "graph/node_def_util.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"

#endif  // RILL_TESTS_TEST_PCH_H_
