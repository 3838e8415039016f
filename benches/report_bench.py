#!/usr/bin/env python3
"""Times `rill report` on big and hostile log directories, two builds side by side.

    benches/report_bench.py [--rill AFTER] [--baseline BEFORE] [--timeout S]
        [--trace-mb MB ...] [--depths N ...] [--tags N] [--keep]

Writes, under a temporary directory, one log directory per case (each with
a small event file, so that every build has something to draw):

  depth-N    a trace whose event nests N levels deep ('[' * N ']' * N)
  trace-MB   a Chrome trace of about MB megabytes of "X" events on 64
             threads, with a memory counter
  tags-N     one event file with N scalar tags

and runs `rill report` on each with every build given, in turn. Prints per
case and build: exit status, wall seconds, CPU seconds (user + system, from
/usr/bin/time -v: on a shared machine the steadier figure), peak RSS (from /usr/bin/time -v;
without it, or for a run killed at --timeout, the last VmHWM seen in
/proc), and the size of the page written.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'cli'))
import report_render_test as tf  # noqa: E402  (the TFRecord and Event encoding)


def write_events(logdir, tags):
    os.makedirs(os.path.join(logdir, 'worker0'), exist_ok=True)
    records = [tf.event(1_700_000_000.0, file_version='brain.Event:2')]
    for tag in range(tags):
        for step in (0, 100):
            records.append(tf.event(1_700_000_000.0 + step, step=step,
                                    summary=tf.scalar_summary(f'layer{tag:05d}/loss',
                                                              1.0 / (1 + tag + step))))
    with open(os.path.join(logdir, 'worker0', 'events.out.tfevents.1.host'), 'wb') as f:
        for record in records:
            f.write(tf.tfrecord(record))


def write_deep_trace(path, depth):
    with open(path, 'w') as f:
        f.write('{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "args": ')
        f.write('[' * depth + ']' * depth)
        f.write('}]}')


def write_big_trace(path, megabytes):
    target = megabytes << 20
    with open(path, 'w') as f:
        f.write('{"traceEvents": [\n')
        f.write('{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/job:worker"}}')
        written, i = 0, 0
        chunk = []
        while written < target:
            line = (',\n{"ph": "X", "pid": 1, "tid": %d, "ts": %d, "dur": %d, "name": "op%d", '
                    '"cat": "op", "args": {"shape": "[64,%d]", "device": "CPU:0"}}'
                    % (i % 64, i * 3, 1 + (i * 7919) % 997, i % 300, i % 1000))
            if i % 8 == 0:
                line += (',\n{"ph": "C", "pid": 1, "ts": %d, "name": "memory", '
                         '"args": {"CPU:0": %d}}' % (i * 3, (i * 31) % 100000))
            chunk.append(line)
            written += len(line)
            i += 1
            if len(chunk) == 10000:
                f.write(''.join(chunk))
                chunk = []
        f.write(''.join(chunk))
        f.write('\n], "displayTimeUnit": "ms"}\n')


TIME = '/usr/bin/time'


def vm_hwm_kb(pid):
    """A process's peak resident set so far (VmHWM), or 0 once it is gone."""
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    try:
        with open(f'/proc/{pid}/task/{pid}/children') as f:
            return [int(child) for child in f.read().split()]
    except OSError:
        return []


def run_report(rill, logdir, out, timeout):
    """Runs one report under /usr/bin/time -v, whose "Maximum resident set
    size" is the peak RSS; without it, or for a run killed at the timeout,
    the last VmHWM read from /proc while it ran. (Python's own wait4 would
    count the forked interpreter's pages before the exec.)"""
    if os.path.exists(out):
        os.remove(out)
    argv = [rill, 'report', logdir, '--out', out, '--quiet']
    has_time = os.access(TIME, os.X_OK)
    if has_time:
        argv = [TIME, '-v'] + argv
    with tempfile.TemporaryFile(mode='w+') as err:
        # A session of its own, so that a timeout kills rill and not only time.
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
        start = time.monotonic()
        hwm, killed = 0, False
        while proc.poll() is None:
            report = children(proc.pid) if has_time else [proc.pid]
            hwm = max([hwm] + [vm_hwm_kb(pid) for pid in report])
            if time.monotonic() - start > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                killed = True
                break
            time.sleep(0.02)
        seconds = time.monotonic() - start
        err.seek(0)
        stderr = err.read()
    rss_kb, cpu = hwm, None
    for line in stderr.splitlines():
        if not has_time or killed:
            break
        if 'Maximum resident set size' in line:
            rss_kb = int(line.split(':')[1])
        elif 'User time (seconds)' in line or 'System time (seconds)' in line:
            cpu = (cpu or 0) + float(line.split(':')[1])
    note = ''
    for line in stderr.splitlines():
        if 'warning' in line or 'rill report:' in line or 'terminate' in line:
            note = line.strip()
            note = note if len(note) <= 100 else note[:40] + '...' + note[-57:]
            break
    if killed:
        state = f'killed at {timeout:.0f}s'
    elif proc.returncode == 0:
        state = 'ok'
    else:
        state = f'exit {proc.returncode}'
    return {'status': state, 'seconds': seconds, 'cpu': cpu, 'rss_mb': rss_kb / 1024 if rss_kb else None,
            'page_mb': os.path.getsize(out) / 2**20 if not killed and os.path.exists(out) else None,
            'note': note}


def fmt(value, spec):
    return '-' if value is None else format(value, spec)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    parser.add_argument('--rill', default=os.path.join(root, 'build', 'cli', 'rill'))
    parser.add_argument('--baseline', help='an older rill binary to run beside --rill')
    parser.add_argument('--timeout', type=float, default=120, help='per run, in seconds')
    parser.add_argument('--depths', type=int, nargs='*', default=[5000, 10000, 20000, 40000,
                                                                   1000000])
    parser.add_argument('--trace-mb', type=int, nargs='*', default=[150])
    parser.add_argument('--tags', type=int, default=20000)
    parser.add_argument('--keep', action='store_true', help='keep the log directories')
    args = parser.parse_args()

    builds = [('after', args.rill)]
    if args.baseline:
        builds.insert(0, ('before', args.baseline))
    work = tempfile.mkdtemp(prefix='report_bench.')
    cases = []
    for depth in args.depths:
        logdir = os.path.join(work, f'depth-{depth}')
        write_events(logdir, 1)
        write_deep_trace(os.path.join(logdir, 'deep.trace.json'), depth)
        cases.append((f'depth {depth} ({os.path.getsize(os.path.join(logdir, "deep.trace.json")) / 2**20:.1f} MB)', logdir))
    for megabytes in args.trace_mb:
        logdir = os.path.join(work, f'trace-{megabytes}')
        write_events(logdir, 1)
        write_big_trace(os.path.join(logdir, 'big.trace.json'), megabytes)
        cases.append((f'trace {megabytes} MB', logdir))
    if args.tags:
        logdir = os.path.join(work, f'tags-{args.tags}')
        write_events(logdir, args.tags)
        cases.append((f'{args.tags} tags', logdir))

    print(f'{"case":<24} {"build":<7} {"status":<15} {"seconds":>8} {"CPU s":>7} '
          f'{"peak RSS MB":>12} {"page MB":>8}  first warning')
    try:
        for name, logdir in cases:
            for build, rill in builds:
                r = run_report(rill, logdir, os.path.join(work, f'{build}.html'), args.timeout)
                print(f'{name:<24} {build:<7} {r["status"]:<15} {fmt(r["seconds"], "8.2f")} '
                      f'{fmt(r["cpu"], "7.2f")} {fmt(r["rss_mb"], "12.1f")} '
                      f'{fmt(r["page_mb"], "8.2f")}  {r["note"]}', flush=True)
    finally:
        if args.keep:
            print(f'log directories kept in {work}')
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
