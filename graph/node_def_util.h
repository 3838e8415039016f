// NodeDef helpers in one include: tensor names (tensor_id.h), attr values
// (attr_value_util.h), a node's attrs (node_attrs.h) and its expanded
// signature (node_signature.h).
#ifndef RILL_GRAPH_NODE_DEF_UTIL_H_
#define RILL_GRAPH_NODE_DEF_UTIL_H_

#include "graph/attr_value_util.h"
#include "graph/node_attrs.h"
#include "graph/node_signature.h"
#include "graph/tensor_id.h"

#endif  // RILL_GRAPH_NODE_DEF_UTIL_H_
