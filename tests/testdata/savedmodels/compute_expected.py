#!/usr/bin/env python3
# Recomputes, with numpy alone, what the Keras SavedModels beside this file
# output for the inputs README.md lists: the weights are read from the
# variables/ tensor bundle by hand (a LevelDB table of BundleEntryProtos and
# a data file), the layers from keras_metadata.pb's JSON. Needs python3 and
# numpy, not TensorFlow and not the protobuf module.
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
            dtype = DTYPES.get(entry.get(1))
            if dtype is None or entry.get(3, 0) != 0:
                continue
            dims = [d for n, _, dim in fields(entry.get(2, b'')) if n == 2
                    for m, _, d in fields(dim) if m == 1]
            start, length = entry.get(4, 0), entry.get(5, 0)
            tensors[key.decode()] = np.frombuffer(
                data[start:start + length], dtype=dtype).reshape(dims)
    return tensors


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
}


def run_dense_model(folder, x):
    weights = read_bundle(os.path.join(folder, 'variables', 'variables'))
    h = np.asarray(x, dtype=np.float64)
    k = 0
    for layer in keras_layers(os.path.join(folder, 'keras_metadata.pb')):
        if layer['class_name'] != 'Dense':
            continue
        name = 'layer_with_weights-%d/%s/.ATTRIBUTES/VARIABLE_VALUE'
        h = h @ weights[name % (k, 'kernel')].astype(np.float64)
        h = h + weights[name % (k, 'bias')]
        h = ACTIVATIONS[layer['config']['activation']](h)
        k += 1
    return h


# The inputs README.md lists for each model.
INPUTS = {
    'keras_churn_mlp': [
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 0.1, 0.2, 0.3],
        [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1],
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    ],
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    names = [os.path.basename(os.path.normpath(a)) for a in sys.argv[1:]] or sorted(INPUTS)
    for name in names:
        y = run_dense_model(os.path.join(here, name), INPUTS[name])
        print(name, np.array2string(y.ravel(), precision=7, separator=', '))


if __name__ == '__main__':
    main()
