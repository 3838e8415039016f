// The C++ graph-building API in one include: Scope, the typed op wrappers
// (ops::MatMul, ...), their Input type, the Variable and PartitionedVariable
// helpers and the report of uninitialized variables.
#ifndef RILL_OPS_OPS_H_
#define RILL_OPS_OPS_H_

#include "graph/cond.h"
#include "graph/scope.h"
#include "graph/while_loop.h"
#include "ops/input.h"
#include "ops/partitioned_variable.h"
#include "ops/registry.h"
#include "ops/standard_ops.h"
#include "ops/uninitialized_variables.h"
#include "ops/variable.h"

namespace rill::ops {

// A root scope whose graph may use every standard op.
inline Scope NewRootScope() { return Scope::NewRootScope(StandardOps()); }

}  // namespace rill::ops

#endif  // RILL_OPS_OPS_H_
