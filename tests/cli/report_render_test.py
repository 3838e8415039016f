#!/usr/bin/env python3
"""Renders a `rill report` page in headless Chromium and checks what it drew.

The log directory is written here, without rill: TFRecord framing with
masked CRC32C around hand-encoded Event protos, a checkpoint state and a
Chrome trace. Then `$RILL_BIN report` writes the page, Chromium dumps its
DOM (the plots must be there) and takes a screenshot (it must not be
blank). Exits 77, which meson counts as skipped, when Chromium is missing.
With --logdir DIR (and --rill PATH), it draws a real run's log directory
instead: tests/cluster/distributed_mnist_test.cc's 1 ps + 2 workers.
"""

import html.parser
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

CHROMIUM_TIMEOUT_S = 120


# --- TFRecord and protobuf encoding, as TensorFlow's event files hold them.

def _crc32c_table():
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(data):
    length = struct.pack('<Q', len(data))
    return (length + struct.pack('<I', masked_crc(length)) + data +
            struct.pack('<I', masked_crc(data)))


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def field_double(number, value):
    return varint(number << 3 | 1) + struct.pack('<d', value)


def field_float(number, value):
    return varint(number << 3 | 5) + struct.pack('<f', value)


def field_bytes(number, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(number << 3 | 2) + varint(len(data)) + data


def event(wall_time, step=0, file_version=None, summary=None, session_log=None):
    out = field_double(1, wall_time) + field_varint(2, step)
    if file_version is not None:
        out += field_bytes(3, file_version)
    if summary is not None:
        out += field_bytes(5, summary)
    if session_log is not None:
        out += field_bytes(7, session_log)
    return out


def scalar_summary(tag, value):
    return field_bytes(1, field_bytes(1, tag) + field_float(2, value))


def histogram_summary(tag, values):
    limits = [-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1e300]
    counts = [0.0] * len(limits)
    for v in values:
        counts[next(i for i, limit in enumerate(limits) if v <= limit)] += 1
    histo = (field_double(1, min(values)) + field_double(2, max(values)) +
             field_double(3, len(values)) + field_double(4, sum(values)) +
             field_double(5, sum(v * v for v in values)) +
             field_bytes(6, struct.pack('<%dd' % len(limits), *limits)) +
             field_bytes(7, struct.pack('<%dd' % len(counts), *counts)))
    return field_bytes(1, field_bytes(1, tag) + field_bytes(5, histo))


def checkpoint_log(path):
    return field_varint(1, 3) + field_bytes(2, path)  # SessionLog CHECKPOINT.


def write_logdir(logdir):
    start = 1_700_000_000.0
    for task_index, task in enumerate(['worker0', 'worker1']):
        records = [event(start, file_version='brain.Event:2')]
        for step in range(0, 1001, 50):
            wall = start + step * 0.2 + task_index
            records.append(event(wall, step, summary=scalar_summary(
                'loss', 2.0 * math.exp(-step / 300.0) + 0.1 * task_index)))
            records.append(event(wall, step, summary=scalar_summary(
                'accuracy', 1.0 - math.exp(-step / 250.0))))
            records.append(event(wall, step, summary=scalar_summary(
                'global_step/sec', 5.0 + task_index + math.sin(step / 100.0))))
            if step % 250 == 0:
                values = [math.sin(i * 0.37) * (0.3 + step / 1000.0) for i in range(300)]
                records.append(event(wall, step, summary=histogram_summary(
                    'dense/kernel', values)))
        records.append(event(start + 100, 500,
                             session_log=checkpoint_log(logdir + '/model.ckpt-500')))
        os.makedirs(os.path.join(logdir, task))
        path = os.path.join(logdir, task, 'events.out.tfevents.1700000000.host%d' % task_index)
        with open(path, 'wb') as f:
            f.write(b''.join(tfrecord(r) for r in records))
    with open(os.path.join(logdir, 'checkpoint'), 'w') as f:
        f.write('model_checkpoint_path: "model.ckpt-1000"\n'
                'all_model_checkpoint_paths: "model.ckpt-500"\n'
                'all_model_checkpoint_paths: "model.ckpt-1000"\n')
    events = [
        {'ph': 'M', 'pid': 1, 'name': 'process_name', 'args': {'name': '/job:worker/task:0'}},
        {'ph': 'M', 'pid': 1, 'tid': 1, 'name': 'thread_name', 'args': {'name': 'CPU:0'}},
        {'ph': 'M', 'pid': 2, 'name': 'process_name', 'args': {'name': '/job:ps/task:0'}},
        {'ph': 'M', 'pid': 2, 'tid': 1, 'name': 'thread_name', 'args': {'name': 'CPU:0'}},
    ]
    for i in range(12):
        events.append({'ph': 'X', 'pid': 1, 'tid': 1, 'ts': 100 + i * 80, 'dur': 60,
                       'name': 'MatMul_%d' % i, 'cat': 'op'})
        events.append({'ph': 'C', 'pid': 1, 'ts': 100 + i * 80, 'name': 'memory',
                       'args': {'CPU:0': 1000 + 300 * i}})
    events += [
        {'ph': 'X', 'pid': 2, 'tid': 1, 'ts': 400, 'dur': 300, 'name': 'ApplyGradientDescent',
         'cat': 'op'},
        {'ph': 's', 'pid': 1, 'tid': 1, 'ts': 350, 'id': 1, 'name': 'grad', 'cat': 'tensor'},
        {'ph': 'f', 'pid': 2, 'tid': 1, 'ts': 400, 'id': 1, 'name': 'grad', 'cat': 'tensor'},
    ]
    with open(os.path.join(logdir, 'step_1000.trace.json'), 'w') as f:
        json.dump({'traceEvents': events}, f)


# --- What Chromium made of the page.

class SvgCounter(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg_classes = {}
        self.text = []

    def handle_starttag(self, tag, attrs):
        if tag == 'svg':
            for name in (dict(attrs).get('class') or '').split():
                self.svg_classes[name] = self.svg_classes.get(name, 0) + 1

    def handle_data(self, data):
        self.text.append(data)


def png_pixels(path):
    """(width, height, channels, rows of bytes) of an 8-bit, non-interlaced PNG."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('%s is not a PNG' % path)
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b'IHDR':
            header = struct.unpack('>IIBBBBB', chunk)
        elif kind == b'IDAT':
            idat.append(chunk)
        pos += 12 + length
    width, height, depth, color_type, _, _, interlace = header
    channels = {0: 1, 2: 3, 4: 2, 6: 4}.get(color_type)
    if depth != 8 or channels is None or interlace:
        raise ValueError('%s: unsupported PNG (depth %d, color type %d, interlace %d)' %
                         (path, depth, color_type, interlace))
    raw = zlib.decompress(b''.join(idat))
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(channels, stride):
                line[i] = (line[i] + line[i - channels]) & 0xFF
        elif kind == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                left = line[i - channels] if i >= channels else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                a = line[i - channels] if i >= channels else 0
                b, c = prev[i], prev[i - channels] if i >= channels else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def run_chromium(chromium, args, profile):
    command = [chromium, '--headless', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
               '--no-first-run', '--user-data-dir=' + profile] + args
    return subprocess.run(command, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S)


def fail(message):
    print('FAIL: ' + message)
    sys.exit(1)


def render_and_check(rill, logdir, work, expected, words):
    """Reports `logdir`, renders the page in Chromium and checks it: the
    <svg> classes `expected` counts (a number: exactly; a pair: at least,
    at most), the `words` shown, and a screenshot with something drawn."""
    page = os.path.join(work, 'report.html')
    report = subprocess.run([rill, 'report', logdir, '--out', page, '--quiet'],
                            capture_output=True, text=True, timeout=120)
    if report.returncode != 0:
        fail('rill report exited %d: %s' % (report.returncode, report.stderr))
    print(report.stdout.strip())

    chromium = shutil.which('chromium') or shutil.which('chromium-browser')
    if chromium is None:
        print('SKIP: no chromium or chromium-browser on PATH (scripts/setup.sh installs it)')
        sys.exit(77)

    url = 'file://' + page
    dom = run_chromium(chromium, ['--dump-dom', url], os.path.join(work, 'profile-dom'))
    if dom.returncode != 0 or '<svg' not in dom.stdout:
        fail('chromium --dump-dom exited %d: %s' % (dom.returncode, dom.stderr[-2000:]))
    parser = SvgCounter()
    parser.feed(dom.stdout)
    counts = parser.svg_classes
    text = ''.join(parser.text)
    for name, count in expected.items():
        low, high = count if isinstance(count, tuple) else (count, count)
        if not low <= counts.get(name, 0) <= high:
            fail('the DOM has %d <svg class="%s">, expected %s (all: %s)' %
                 (counts.get(name, 0), name, count, counts))
    for phrase in words:
        if phrase not in text:
            fail('the page does not show %r' % phrase)

    screenshot = os.path.join(work, 'report.png')
    shot = run_chromium(chromium, ['--screenshot=' + screenshot, '--window-size=1280,2000',
                                   '--hide-scrollbars', url], os.path.join(work, 'profile-shot'))
    if not os.path.exists(screenshot):
        fail('chromium --screenshot wrote nothing (exit %d): %s' %
             (shot.returncode, shot.stderr[-2000:]))
    print('screenshot: ' + screenshot)
    width, height, channels, rows = png_pixels(screenshot)
    colors, inked = set(), 0
    for row in rows:
        for x in range(0, width * channels, channels):
            pixel = row[x:x + 3]
            colors.add(pixel)
            if pixel != b'\xff\xff\xff':
                inked += 1
    print('%dx%d screenshot: %d colours, %d of %d pixels not white' %
          (width, height, len(colors), inked, width * height))
    if len(colors) < 50:
        fail('the screenshot has only %d colours: is anything drawn?' % len(colors))
    if inked < width * height // 50:
        fail('only %d pixels of the screenshot are not white' % inked)
    for profile in ('profile-dom', 'profile-shot'):
        shutil.rmtree(os.path.join(work, profile), ignore_errors=True)


def main():
    # With --logdir DIR [--rill PATH]: the log directory of a real run (a
    # cluster test's), drawn with whatever it holds; without, one written here.
    args = sys.argv[1:]
    rill = os.environ.get('RILL_BIN')
    if '--rill' in args:
        rill = args[args.index('--rill') + 1]
    if not rill:
        fail('RILL_BIN is not set (run through meson test)')
    work = tempfile.mkdtemp(prefix='rill_report_render_')
    if '--logdir' in args:
        logdir = args[args.index('--logdir') + 1]
        render_and_check(rill, logdir, work,
                         {'scalar-plot': (2, 1000), 'histogram': (1, 1000), 'timeline': 1},
                         ['loss vs step', 'hidden/weights', '/job:ps/replica:0/task:0'])
        print('PASS')
        return
    logdir = os.path.join(work, 'logs')
    write_logdir(logdir)
    render_and_check(rill, logdir, work,
                     {'scalar-plot': 6, 'by-step': 3, 'by-wall-time': 3, 'histogram': 2,
                      'timeline': 1, 'counter-chart': 1},
                     ['loss vs step', 'accuracy vs wall time', 'global_step/sec (rate) vs step',
                      'dense/kernel', 'model.ckpt-1000', '/job:ps/task:0', 'worker1'])
    shutil.rmtree(logdir, ignore_errors=True)
    print('PASS')


if __name__ == '__main__':
    main()
