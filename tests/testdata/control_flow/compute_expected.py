#!/usr/bin/env python3
# Recomputes, with numpy alone, what the control-flow GraphDefs described in
# README.md beside this file output, reading their weights from the files.
#
# Usage: compute_expected.py [DIR]
#   DIR holds the .pb files; by default the folder of this script, where they
#   are. Needs python3 and numpy, not TensorFlow and not the protobuf module:
#   the few GraphDef fields used are decoded by hand (../protobuf_wire.py).
#
# For each graph it prints the facts README.md lists (ops, placeholders,
# frames) and then, for each input, the expected output: the value the
# graph's source recorded when one exists, and the value recomputed here by
# re-implementing the graph's math; the two must agree, which checks both this
# reading of the graph and the recorded value.

import collections
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from protobuf_wire import fields, varint  # noqa: E402

# --- GraphDef, read with the wire reader (../protobuf_wire.py) -------------

DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 9: np.int64, 10: np.bool_}
DTYPE_NAMES = {1: 'float', 2: 'double', 3: 'int32', 7: 'string', 9: 'int64',
               10: 'bool', 20: 'resource'}


def _signed(value):
    return value - (1 << 64) if value >= 1 << 63 else value


def _varints(value, wire):
    """A repeated varint field, packed (wire type 2) or not."""
    if wire == 0:
        return [_signed(value)]
    out, pos = [], 0
    while pos < len(value):
        item, pos = varint(value, pos)
        out.append(_signed(item))
    return out


def _shape(buf):
    """TensorShapeProto: a list of sizes (-1 unknown), None if rank unknown."""
    dims, unknown_rank = [], False
    for number, _, value in fields(buf):
        if number == 2:
            for dim_field, _, size in fields(value):
                if dim_field == 1:
                    dims.append(_signed(size))
        elif number == 3:
            unknown_rank = bool(value)
    return None if unknown_rank else dims


def _tensor(buf):
    """TensorProto of a numeric dtype as a numpy array."""
    dtype, shape, content, values = 1, [], None, []
    for number, wire, value in fields(buf):
        if number == 1:
            dtype = value
        elif number == 2:
            shape = _shape(value)
        elif number == 4:
            content = value
        elif number == 5:  # float_val
            values += list(struct.unpack('<%df' % (len(value) // 4), value))
        elif number == 6:  # double_val
            values += list(struct.unpack('<%dd' % (len(value) // 8), value))
        elif number in (7, 10, 11):  # int_val, int64_val, bool_val
            values += _varints(value, wire)
    np_type = DTYPES[dtype]
    count = int(np.prod(shape)) if shape else 1
    if content is not None:
        array = np.frombuffer(content, dtype=np_type).copy()
    else:
        array = np.array(values or [0], dtype=np_type)
        if array.size < count:  # TensorFlow repeats the last value
            array = np.concatenate([array, np.full(count - array.size, array[-1], np_type)])
    return array.reshape(shape)


def _attr(buf):
    for number, wire, value in fields(buf):
        if number == 2:
            return value.decode()
        if number in (3, 6):
            return _signed(value)
        if number == 4:
            return struct.unpack('<f', value)[0]
        if number == 5:
            return bool(value)
        if number == 7:
            return _shape(value)
        if number == 8:
            return _tensor(value)
    return None


class Node:
    def __init__(self, buf):
        self.name, self.op, self.inputs, self.attr = '', '', [], {}
        for number, _, value in fields(buf):
            if number == 1:
                self.name = value.decode()
            elif number == 2:
                self.op = value.decode()
            elif number == 3:
                self.inputs.append(value.decode())
            elif number == 5:
                key = attr = None
                for entry_field, _, entry in fields(value):
                    if entry_field == 1:
                        key = entry.decode()
                    elif entry_field == 2:
                        attr = _attr(entry)
                self.attr[key] = attr


class Graph:
    def __init__(self, path):
        self.nodes, self.producer = [], None
        with open(path, 'rb') as f:
            buf = f.read()
        for number, _, value in fields(buf):
            if number == 1:
                self.nodes.append(Node(value))
            elif number == 4:
                self.producer = dict((n, v) for n, _, v in fields(value)).get(1, 0)
        self.node = {n.name: n for n in self.nodes}

    def const(self, name):
        node = self.node[name]
        assert node.op == 'Const', '%s is a %s, not a Const' % (name, node.op)
        return node.attr['value']


def describe(graph):
    ops = collections.Counter(n.op for n in graph.nodes)
    print('  nodes: %d; versions.producer: %s' % (
        len(graph.nodes), 'absent' if graph.producer is None else graph.producer))
    print('  ops (%d): %s' % (len(ops), ', '.join(sorted(ops))))
    for n in graph.nodes:
        if n.op == 'Placeholder':
            print('  placeholder %s: %s %s' % (
                n.name, DTYPE_NAMES[n.attr['dtype']], n.attr.get('shape')))
    frames = collections.OrderedDict()
    for n in graph.nodes:
        if n.op == 'Enter':
            key = (n.attr['frame_name'], n.attr['parallel_iterations'])
            frames.setdefault(key, []).append(n.attr['is_constant'])
    for (frame, parallel), constant in frames.items():
        print('  frame "%s": parallel_iterations %d, %d Enter (%d is_constant)' % (
            frame, parallel, len(constant), sum(constant)))


# --- Checking --------------------------------------------------------------

FAILURES = []


def cpp_list(array, per_line=6):
    """The values, row-major, as a C++ initializer list with 12 significant digits."""
    items = ['%.12g' % v for v in np.asarray(array, dtype=np.float64).ravel()]
    lines = [', '.join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return '{' + ',\n       '.join(lines) + '}'


def report(label, computed, recorded=None, rtol=1e-6, atol=1e-7):
    computed = np.asarray(computed)
    print('    %s: shape %s\n      %s' % (label, list(computed.shape), cpp_list(computed)))
    if recorded is not None:
        recorded = np.asarray(recorded).reshape(computed.shape)
        ok = np.allclose(computed, recorded, rtol=rtol, atol=atol)
        print('      recorded by the source: %s (max |diff| %.3g)' % (
            'AGREES' if ok else 'DIFFERS', np.max(np.abs(computed - recorded))))
        if not ok:
            FAILURES.append(label)


# --- The graphs ------------------------------------------------------------

def while_simple(g):
    # i = 0; while i < 10: i += 1
    i = g.const('loop_var')
    while i < g.const('while/Less/y'):
        i = i + g.const('while/Add/y')
    report('output (no feeds)', i, recorded=10)


def while_two_vars(g):
    # (x, y) = (input_0, input_1); while sum(x) < y: x += 2; y -= 1
    # output = x + y
    def run(x, y):
        x, y = np.float32(x), np.float32(y)
        step, dec = g.const('Variable'), g.const('while/Sub/y')
        iterations = 0
        while np.sum(x, dtype=np.float32) < y:
            x, y, iterations = x + step, y - dec, iterations + 1
        return x + y, iterations

    x0 = [[1, 2], [3, 4]]
    out, n = run(x0, 21)
    report('input_0=%s input_1=21 (%d iterations)' % (x0, n), out,
           recorded=[24, 25, 26, 27])
    out, n = run(x0, 5)
    report('input_0=%s input_1=5 (%d iterations: the body never runs)' % (x0, n), out)
    out, n = run([[0.5, -1], [2, 0.25]], 40)
    report('input_0=[[0.5, -1], [2, 0.25]] input_1=40 (%d iterations)' % n, out)


def while_nested(g):
    # (x, y) = (input_0, input_1)
    # while mean(x) < 10:
    #   x += 2
    #   while sum(y) <= sum(x): y += 1      (inner frame)
    #   y -= 1
    # output = x + mean(y)
    def run(x, y):
        x, y = np.float32(x), np.float32(y)
        limit, step = g.const('Variable'), g.const('Variable_1')
        inner_step = g.const('Variable_2')
        outer = inner = 0
        while np.mean(x, dtype=np.float32) < limit:
            x = x + step
            while np.sum(y, dtype=np.float32) <= np.sum(x, dtype=np.float32):
                y = y + inner_step
                inner += 1
            y = y - inner_step
            outer += 1
        return x + np.mean(y, dtype=np.float32), outer, inner

    x0, y0 = [[1, 2], [3, 4]], np.ones([3, 3])
    out, outer, inner = run(x0, y0)
    report('input_0=%s input_1=ones(3,3) (%d outer, %d inner iterations)' % (
        x0, outer, inner), out, recorded=[13, 14, 15, 16])
    out, outer, inner = run([[10, 11], [12, 13]], y0)
    report('input_0=[[10, 11], [12, 13]] input_1=ones(3,3) (%d outer, %d inner: '
           'the outer body never runs)' % (outer, inner), out)
    out, outer, inner = run(x0, np.full([3, 3], 0.25))
    report('input_0=%s input_1=full(3,3, 0.25) (%d outer, %d inner)' % (
        x0, outer, inner), out)


def cond_placeholder(g):
    # output = input_0 + 2 if sum(input_0) < input_1 else input_0 - 2
    def run(x, y):
        x = np.float32(x)
        two = g.const('Variable')
        return x + two if np.sum(x, dtype=np.float32) < np.float32(y) else x - two

    x0 = [[1, 2], [3, 4]]
    report('input_0=%s input_1=11 (true branch, Add)' % x0, run(x0, 11),
           recorded=[3, 4, 5, 6])
    report('input_0=%s input_1=10 (false branch, Sub: 10 < 10 is false)' % x0,
           run(x0, 10))


def cond_two_conds(g):
    # Two tf.conds (cond5, cond6) on the same predicate, no feeds:
    # r = greater / 2 if sum(greater - lesser) < 2 else lesser * 4
    # output = (r + 1) + (r + 1)
    greater, lesser = g.const('greater'), g.const('lesser')
    results = []
    for scope in ('cond5', 'cond6'):
        if np.sum(greater - lesser) < g.const('Less/y'):
            r = greater / g.const(scope + '/div_f1_constant')
        else:
            r = lesser * g.const(scope + '/mul_f2_constant')
        results.append(r + 1.0)
    report('output (no feeds; both conds take the false branch, Mul)',
           results[0] + results[1], recorded=[10, 18, 26, 34])


GRU_INPUT = [  # [5, 2, 6]: batch 5, 2 time steps, 6 features (source's CSV)
    0.38885121, 0.39885121, 0.40885121, 0.41885121, 0.42885121, 0.43885121,
    0.11877061, 0.12877061, 0.13877061, 0.14877061, 0.15877061, 0.16877061,
    0.41213927, 0.42213927, 0.43213927, 0.44213927, 0.45213927, 0.46213927,
    0.48287460, 0.49287460, 0.50287460, 0.51287460, 0.52287460, 0.53287460,
    0.48630056, 0.49630056, 0.50630056, 0.51630056, 0.52630056, 0.53630056,
    0.22672462, 0.23672462, 0.24672462, 0.25672462, 0.26672462, 0.27672462,
    0.30452123, 0.31452123, 0.32452123, 0.33452123, 0.34452123, 0.35452123,
    0.38776326, 0.39776326, 0.40776326, 0.41776326, 0.42776326, 0.43776326,
    0.32080667, 0.33080667, 0.34080667, 0.35080667, 0.36080667, 0.37080667,
    0.36100911, 0.37100911, 0.38100911, 0.39100911, 0.40100911, 0.41100911]
GRU_OUTPUT = [  # [5, 2] (source's CSV)
    0.53077423, 0.46922577, 0.53077432, 0.46922568, 0.53077434, 0.46922566,
    0.53077420, 0.46922580, 0.53077421, 0.46922579]


def dynamic_rnn_gru(g):
    # tf.nn.dynamic_rnn over a MultiRNNCell of 5 GRUCells (3 units), float64,
    # on input [batch, 2 time steps, 6];
    # output = softmax(top layer's output at time 1 @ Variable_2 + Variable_3).
    def sigmoid(v):
        return 1.0 / (1.0 + np.exp(-v))

    def run(x):
        x = np.asarray(x, dtype=np.float64)
        batch, steps = x.shape[0], x.shape[1]
        layers = 5
        prefix = 'rnn/multi_rnn_cell/cell_%d/gru_cell/'
        state = [np.zeros((batch, 3)) for _ in range(layers)]
        outputs = []
        for t in range(steps):
            h = x[:, t, :]
            for k in range(layers):
                p = prefix % k
                gates = sigmoid(np.concatenate([h, state[k]], 1) @ g.const(p + 'gates/kernel')
                                + g.const(p + 'gates/bias'))
                r, u = gates[:, :3], gates[:, 3:]
                c = np.tanh(np.concatenate([h, r * state[k]], 1) @ g.const(p + 'candidate/kernel')
                            + g.const(p + 'candidate/bias'))
                state[k] = u * state[k] + (1 - u) * c
                h = state[k]
            outputs.append(h)
        # transpose_1 makes it [time, batch, 3]; Gather takes time step 1.
        last = outputs[int(g.const('Gather/indices'))]
        logits = last @ g.const('Variable_2') + g.const('Variable_3')
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        # rnn/transpose:0 is dynamic_rnn's output, [batch, time, 3]: the top
        # layer's state after each step, stacked from the TensorArray.
        return e / e.sum(axis=1, keepdims=True), np.stack(outputs, axis=1)

    x = np.array(GRU_INPUT).reshape(5, 2, 6)
    out, rnn = run(x)
    # The recorded output has 8 decimals and the recorded input was rounded to
    # 8 decimals too, hence the tolerance.
    report('input = GRU_INPUT [5, 2, 6]', out, recorded=GRU_OUTPUT, rtol=0, atol=2e-8)
    report('  and rnn/transpose:0 for it', rnn)
    x1 = ((np.arange(12) - 6) / 4).reshape(1, 2, 6)
    out, rnn = run(x1)
    report('input = %s [1, 2, 6] (batch 1)' % cpp_list(x1), out)
    report('  and rnn/transpose:0 for it', rnn)
    x2 = (np.arange(24) % 5 / 2).reshape(2, 2, 6)
    out, rnn = run(x2)
    report('input = %s [2, 2, 6] (batch 2)' % cpp_list(x2, per_line=12), out)
    report('  and rnn/transpose:0 for it', rnn)


GRAPHS = [
    ('dl4j_simple_while.pb', while_simple),
    ('dl4j_simplewhile_1.pb', while_two_vars),
    ('dl4j_simplewhile_nested.pb', while_nested),
    ('dl4j_simpleif_0.pb', cond_placeholder),
    ('dl4j_simple_cond.pb', cond_two_conds),
    ('dl4j_primitive_gru_dynamic.pb', dynamic_rnn_gru),
]


def main():
    if len(sys.argv) > 1:
        directory = sys.argv[1]
    else:
        directory = os.path.dirname(os.path.abspath(__file__))
    missing = 0
    for name, compute in GRAPHS:
        path = os.path.join(directory, name)
        print('== %s' % name)
        if not os.path.exists(path):
            print('  missing: %s' % path)
            missing += 1
            continue
        graph = Graph(path)
        describe(graph)
        print('  expected outputs (fetch "output:0"):')
        compute(graph)
    if FAILURES:
        print('DISAGREE with the recorded values: %s' % ', '.join(FAILURES))
        return 1
    return 2 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
