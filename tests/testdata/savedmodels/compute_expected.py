#!/usr/bin/env python3
# Recomputes, with numpy alone, what the Keras SavedModels beside this file
# output for the inputs README.md lists: the weights are read from the
# variables/ tensor bundle by hand (a LevelDB table of BundleEntryProtos and
# a data file), found by their paths in the bundle's object graph, the layers
# from keras_metadata.pb's JSON (Dense, LSTM and GRU). Needs python3 and numpy,
# not TensorFlow and not the protobuf module.
#
# Usage: compute_expected.py [DIR]   (DIR: a model folder; default: all)

import json
import os
import re
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from protobuf_wire import fields, varint  # noqa: E402

DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 9: np.int64}
DT_STRING = 7


def block_entries(table, offset, size):
    """A LevelDB block's (key, value) pairs (keys share prefixes)."""
    block = table[offset:offset + size]
    num_restarts = struct.unpack('<I', block[-4:])[0]
    end = len(block) - 4 - 4 * num_restarts
    pos, key = 0, b''
    while pos < end:
        shared, pos = varint(block, pos)
        unshared, pos = varint(block, pos)
        value_size, pos = varint(block, pos)
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        yield key, block[pos:pos + value_size]
        pos += value_size


def read_bundle(prefix):
    """{name: array} of a TensorFlow tensor bundle (variables.index + data)."""
    table = open(prefix + '.index', 'rb').read()
    footer = table[-48:]
    _, pos = varint(footer, 0)
    _, pos = varint(footer, pos)  # The metaindex block: not needed.
    index_offset, pos = varint(footer, pos)
    index_size, pos = varint(footer, pos)
    data = open(prefix + '.data-00000-of-00001', 'rb').read()
    tensors = {}
    for _, handle in block_entries(table, index_offset, index_size):
        offset, pos = varint(handle, 0)
        size, _ = varint(handle, pos)
        for key, value in block_entries(table, offset, size):
            if not key:
                continue  # The bundle's header.
            entry = {n: v for n, _, v in fields(value)}
            dims = [d for n, _, dim in fields(entry.get(2, b'')) if n == 2
                    for m, _, d in fields(dim) if m == 1]
            start, length = entry.get(4, 0), entry.get(5, 0)
            if entry.get(1) == DT_STRING and not dims and entry.get(3, 0) == 0:
                # A scalar string: its length, a checksum, then the bytes.
                size, pos = varint(data, start)
                tensors[key.decode()] = data[pos + 4:pos + 4 + size]
                continue
            dtype = DTYPES.get(entry.get(1))
            if dtype is None or entry.get(3, 0) != 0:
                continue
            tensors[key.decode()] = np.frombuffer(
                data[start:start + length], dtype=dtype).reshape(dims)
    return tensors


def checkpoint_key(bundle, path):
    """The bundle key of the variable at path (e.g. 'layer_with_weights-0/
    cell/kernel') in the TrackableObjectGraph the bundle keeps under
    _CHECKPOINTABLE_OBJECT_GRAPH: a variable reachable by several paths is
    saved under the first one found, e.g. 'trainable_variables/1/...'."""
    nodes = [node for n, _, node in
             fields(bundle['_CHECKPOINTABLE_OBJECT_GRAPH']) if n == 1]
    node = nodes[0]
    for name in path.split('/'):
        children = [{m: v for m, _, v in fields(child)}
                    for n, _, child in fields(node) if n == 1]
        ids = [c.get(1, 0) for c in children if c.get(2) == name.encode()]
        if not ids:
            raise KeyError(path)
        node = nodes[ids[0]]
    for n, _, attribute in fields(node):
        attribute = {m: v for m, _, v in fields(attribute)}
        if n == 2 and attribute.get(1) == b'VARIABLE_VALUE':
            return attribute[3].decode()
    raise KeyError(path)


def keras_layers(path):
    """The Sequential model's layer configs, from keras_metadata.pb."""
    text = open(path, 'rb').read().decode('utf-8', 'replace')
    for match in re.finditer(r'\{"name": "sequential.*', text):
        decoder = json.JSONDecoder()
        config, _ = decoder.raw_decode(text[match.start():])
        return config['config']['layers']
    raise ValueError('no Sequential model in ' + path)


ACTIVATIONS = {
    'linear': lambda x: x,
    'relu': lambda x: np.maximum(x, 0),
    'sigmoid': lambda x: 1 / (1 + np.exp(-x)),
    'tanh': np.tanh,
    'hard_sigmoid': lambda x: np.clip(0.2 * x + 0.5, 0, 1),
}


def lstm(x, config, weight):
    """A Keras LSTM over x [batch, time, features] from zero states: the
    columns of kernel, recurrent_kernel and bias are the gates i, f, c, o."""
    for flag in ('go_backwards', 'stateful', 'time_major', 'return_state'):
        if config.get(flag):
            raise NotImplementedError('LSTM with ' + flag)
    act = ACTIVATIONS[config['activation']]
    recurrent_act = ACTIVATIONS[config['recurrent_activation']]
    kernel, recurrent = weight('kernel'), weight('recurrent_kernel')
    bias = weight('bias') if config.get('use_bias', True) else 0
    h = np.zeros((x.shape[0], config['units']))
    c = np.zeros_like(h)
    outputs = []
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + bias
        i, f, g, o = np.split(z, 4, axis=-1)
        c = recurrent_act(f) * c + recurrent_act(i) * act(g)
        h = recurrent_act(o) * act(c)
        outputs.append(h)
    return np.stack(outputs, axis=1) if config.get('return_sequences') else h


def gru(x, config, weight):
    """A Keras GRU over x [batch, time, features] from a zero state: the
    columns of kernel, recurrent_kernel and bias are the gates z, r, h. With
    reset_after (TF2's default) the bias is [2, 3 * units], the input's row
    then the recurrent one's, and the reset gate scales h @ U_h + b_rec_h;
    without it the bias is [3 * units] and the candidate is (r * h) @ U_h."""
    for flag in ('go_backwards', 'stateful', 'time_major', 'return_state'):
        if config.get(flag):
            raise NotImplementedError('GRU with ' + flag)
    act = ACTIVATIONS[config['activation']]
    recurrent_act = ACTIVATIONS[config['recurrent_activation']]
    kernel, recurrent = weight('kernel'), weight('recurrent_kernel')
    reset_after = config.get('reset_after', False)
    units = config['units']
    if not config.get('use_bias', True):
        input_bias = recurrent_bias = np.zeros(3 * units)
    elif reset_after:
        input_bias, recurrent_bias = weight('bias')
    else:
        input_bias, recurrent_bias = weight('bias'), np.zeros(3 * units)
    h = np.zeros((x.shape[0], units))
    outputs = []
    for t in range(x.shape[1]):
        x_z, x_r, x_h = np.split(x[:, t] @ kernel + input_bias, 3, axis=-1)
        if reset_after:
            rec_z, rec_r, rec_h = np.split(h @ recurrent + recurrent_bias, 3,
                                           axis=-1)
        else:
            rec_z, rec_r = np.split(h @ recurrent[:, :2 * units], 2, axis=-1)
        z = recurrent_act(x_z + rec_z)
        r = recurrent_act(x_r + rec_r)
        if reset_after:
            hh = act(x_h + r * rec_h)
        else:
            hh = act(x_h + (r * h) @ recurrent[:, 2 * units:])
        h = z * h + (1 - z) * hh
        outputs.append(h)
    return np.stack(outputs, axis=1) if config.get('return_sequences') else h


def run_keras_model(folder, x):
    bundle = read_bundle(os.path.join(folder, 'variables', 'variables'))
    h = np.asarray(x, dtype=np.float64)
    k = 0
    for layer in keras_layers(os.path.join(folder, 'keras_metadata.pb')):
        kind, config = layer['class_name'], layer['config']

        def weight(name, prefix='layer_with_weights-%d/' % k):
            key = checkpoint_key(bundle, prefix + name)
            return bundle[key].astype(np.float64)

        if kind == 'Dense':
            h = h @ weight('kernel')
            if config.get('use_bias', True):
                h = h + weight('bias')
            h = ACTIVATIONS[config['activation']](h)
        elif kind == 'LSTM':
            h = lstm(h, config, lambda name: weight('cell/' + name))
        elif kind == 'GRU':
            h = gru(h, config, lambda name: weight('cell/' + name))
        elif kind in ('InputLayer', 'Dropout'):
            continue
        else:
            raise NotImplementedError(kind)
        k += 1
    return h


# The inputs README.md lists for each model.
INPUTS = {
    'keras_churn_mlp': [
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 0.1, 0.2, 0.3],
        [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1],
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    ],
    # [3, 5, 1], five daily prices each: x[t] = 250 + 2t, 300 - 4t, 0.1(t + 1).
    'keras_msft_lstm': [
        [[250], [252], [254], [256], [258]],
        [[300], [296], [292], [288], [284]],
        [[0.1], [0.2], [0.3], [0.4], [0.5]],
    ],
    # The same three series, for the GRU of the same repository.
    'keras_msft_gru': [
        [[250], [252], [254], [256], [258]],
        [[300], [296], [292], [288], [284]],
        [[0.1], [0.2], [0.3], [0.4], [0.5]],
    ],
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    names = [os.path.basename(os.path.normpath(a)) for a in sys.argv[1:]] or sorted(INPUTS)
    for name in names:
        y = run_keras_model(os.path.join(here, name), INPUTS[name])
        print(name, np.array2string(y.ravel(), separator=', ', formatter={
            'float_kind': lambda v: '%.7g' % v}))


if __name__ == '__main__':
    main()
