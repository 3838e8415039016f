#!/usr/bin/env python3
"""What strangers on a `rill server`'s port can make it do, in figures.

    benches/stranger_probe.py [--rill build/cli/rill] [--only 1a,3,6b] [--no-as-cap]
                              [--keep-logs DIR]

Each probe starts its own `rill server` (a ps task on a free port of
127.0.0.1, under a 6 GB address-space cap unless --no-as-cap), attacks it
the way an outsider could, with bounded bytes and seconds, and measures
the server from outside: its peak and final resident memory, the CPU it
spent, what it wrote to its log, whether it is still running, and whether
a real ZeroMQ client's `_ping` is answered during and after the attack.
A probe that fails prints its row with the error and the rest go on. The
table at the end is Markdown.

The real client is pyzmq (Debian's python3-zmq: `scripts/setup.sh bench`);
the attackers speak ZMTP over plain sockets, as tests/transport/raw_zmtp_peer.cc
does.
"""

import argparse
import functools
import os
import resource
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

try:
    import zmq
except ImportError:
    # pyenv's or a venv's python may lack Debian's python3-zmq: use the
    # system python that has it.
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath(
            "/usr/bin/python3") and not os.environ.get("STRANGER_PROBE_REEXEC"):
        os.environ["STRANGER_PROBE_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    sys.exit("stranger_probe: needs pyzmq (scripts/setup.sh bench installs python3-zmq)")

MB = 1_000_000
CHUNK = 1 << 20
SERVING = "Started server with target"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# --- protobuf, by hand: just the RpcHeader fields a probe needs ----------

def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_bytes(number, data):
    return varint(number << 3 | 2) + varint(len(data)) + data


def field_varint(number, value):
    return varint(number << 3) + varint(value)


def rpc_header(method, request_id):
    """An RpcHeader: method (1, bytes), request_id (2, varint)."""
    return field_bytes(1, method) + field_varint(2, request_id)


def parse_fields(data):
    """{field number: last value} of a serialized message (varints and bytes)."""
    fields, pos = {}, 0
    while pos < len(data):
        tag, pos = read_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            fields[number], pos = read_varint(data, pos)
        elif wire == 2:
            length, pos = read_varint(data, pos)
            fields[number] = data[pos:pos + length]
            pos += length
        elif wire == 1:
            fields[number], pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            fields[number], pos = data[pos:pos + 4], pos + 4
        else:
            raise ValueError("wire type %d" % wire)
    return fields


def read_varint(data, pos):
    value, shift = 0, 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


# --- ZMTP, by hand, as a stranger writes it ------------------------------

def greeting():
    """A NULL client's greeting, ZMTP 3.1."""
    g = bytearray(64)
    g[0], g[8], g[9], g[10], g[11] = 0xFF, 1, 0x7F, 3, 1
    g[12:16] = b"NULL"
    return bytes(g)


def frame(body, flags=0):
    if len(body) > 255:
        return bytes([flags | 0x02]) + struct.pack(">Q", len(body)) + body
    return bytes([flags, len(body)]) + body


def properties(props):
    return b"".join(bytes([len(k)]) + k + struct.pack(">I", len(v)) + v for k, v in props)


READY = frame(b"\x05READY" + properties([(b"Socket-Type", b"DEALER"), (b"Identity", b"")]), 0x04)


def read_exactly(sock, n, deadline):
    out = bytearray()
    while len(out) < n:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("the server closed the connection in the handshake")
        out += chunk
    return bytes(out)


def connect(port, handshake=True):
    """A socket to the server; with `handshake`, greeted and READY as a DEALER."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if handshake:
        deadline = time.monotonic() + 10
        sock.sendall(greeting())
        read_exactly(sock, 64, deadline)
        sock.sendall(READY)
        head = read_exactly(sock, 2, deadline)
        body = read_exactly(sock, head[1], deadline)
        if not body.startswith(b"\x05READY"):
            raise ConnectionError("the server's READY is missing")
    sock.settimeout(None)
    return sock


def read_reply(sock, deadline):
    """The fields of the next reply's header; command frames are skipped."""
    first = True
    fields = None
    while True:
        head = read_exactly(sock, 2, deadline)
        flags, size = head[0], head[1]
        if flags & 0x02:
            size = struct.unpack(">Q", head[1:] + read_exactly(sock, 7, deadline))[0]
        body = read_exactly(sock, size, deadline)
        if flags & 0x04:
            continue
        if first:
            fields = parse_fields(body)
            first = False
        if not flags & 0x01:
            return fields


def closed_by_peer(sock, wait):
    """Whether the server closed `sock` within `wait` seconds, reading nothing."""
    poller = select.poll()
    poller.register(sock, select.POLLRDHUP | select.POLLHUP | select.POLLERR)
    return bool(poller.poll(int(wait * 1000)))


def flood(sock, chunk, limit_bytes, limit_s, linger_s=15):
    """Sends `chunk` over and over, never reading, until `limit_bytes` are
    sent, `limit_s` pass, or the server closes; once all is sent, waits at
    most `linger_s` (past --connection_idle_timeout) for the server to
    close. Returns (bytes sent, seconds until the server closed or None)."""
    sock.setblocking(False)
    poller = select.poll()
    poller.register(sock, select.POLLOUT | select.POLLRDHUP | select.POLLHUP | select.POLLERR)
    start = time.monotonic()
    sent, pending = 0, memoryview(b"")
    all_sent = None
    while time.monotonic() - start < limit_s:
        events = poller.poll(200)
        if any(e & (select.POLLRDHUP | select.POLLHUP | select.POLLERR) for _, e in events):
            return sent, time.monotonic() - start
        if not any(e & select.POLLOUT for _, e in events):
            continue
        if sent >= limit_bytes:
            # All sent: wait a while for the server to drop us.
            all_sent = all_sent or time.monotonic()
            if time.monotonic() - all_sent > linger_s:
                break
            time.sleep(0.1)
            continue
        if not pending:
            pending = memoryview(chunk)[:min(len(chunk), limit_bytes - sent)]
        try:
            n = sock.send(pending)
        except BlockingIOError:
            continue
        except OSError:
            return sent, time.monotonic() - start
        sent += n
        pending = pending[n:]
    return sent, None


# --- the server, watched from outside ------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status(pid, field):
    """A /proc/PID/status field in bytes (VmHWM, VmRSS), or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def cpu_seconds(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return (int(rest[11]) + int(rest[12])) / CLOCK_TICKS  # utime, stime
    except (OSError, IndexError):
        return None


class Server:
    def __init__(self, rill, args, as_cap, nofile=None):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="stranger-probe-")
        self.log_path = os.path.join(self.dir, "log")
        limits = []
        if as_cap:
            limits.append("--as=%d" % as_cap)
        if nofile:
            limits.append("--nofile=%s" % nofile)
        command = (["prlimit"] + limits + ["--"] if limits else []) + [
            rill, "server", "--ps_hosts=127.0.0.1:%d" % self.port, "--job_name=ps",
            "--task_index=0"] + list(args)
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        self.pid = self.process.pid
        deadline = time.monotonic() + 60
        while SERVING not in self.log_text():
            if self.process.poll() is not None:
                raise RuntimeError("rill server exited with %s before serving: %s" %
                                   (self.process.returncode, self.log_text()[-300:]))
            if time.monotonic() > deadline:
                raise RuntimeError("rill server did not serve within 60 s")
            time.sleep(0.05)
        self.mark()

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def log_size(self):
        with open(self.log_path, "rb") as f:
            data = f.read()
        return data.count(b"\n"), len(data)

    def mark(self):
        """Counters from here on belong to the attack."""
        self.hwm0 = proc_status(self.pid, "VmHWM")
        self.cpu0 = cpu_seconds(self.pid)
        self.lines0, self.bytes0 = self.log_size()
        self.t0 = time.monotonic()

    def running(self):
        return self.process.poll() is None

    def stop(self, keep_log=None):
        if keep_log:
            shutil.copyfile(self.log_path, keep_log)
        if self.running():
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- the real client -----------------------------------------------------

class RealClient:
    """A pyzmq DEALER that calls `_ping`, as a rill client's transport does."""

    def __init__(self, context, port):
        self.context, self.port, self.next_id = context, port, 1
        self.sock = None

    def _socket(self):
        if self.sock is None:
            self.sock = self.context.socket(zmq.DEALER)
            self.sock.setsockopt(zmq.LINGER, 0)
            self.sock.connect("tcp://127.0.0.1:%d" % self.port)
        return self.sock

    def ping(self, timeout=10.0):
        """(status code or None on timeout, seconds, status message) of one
        `_ping`."""
        sock = self._socket()
        request_id = self.next_id
        self.next_id += 1
        start = time.monotonic()
        sock.send(rpc_header(b"_ping", request_id))
        deadline = start + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sock.poll(int(left * 1000)):
                # A new socket next time: the old one's reply may come late.
                self.close()
                return None, time.monotonic() - start, ""
            frames = sock.recv_multipart()
            fields = parse_fields(frames[0])
            if fields.get(2) == request_id:
                message = fields.get(5, b"").decode("utf-8", "replace")
                return fields.get(4, 0), time.monotonic() - start, message

    def close(self):
        if self.sock is not None:
            self.sock.close(0)
            self.sock = None


class Pinger:
    """Pings every `interval` while an attack runs, from a process of its
    own (so that the attackers' threads cannot delay it), and keeps each
    answer: (status code or None, seconds)."""

    def __init__(self, port, interval=0.25, fresh=False, call_timeout=10.0):
        command = [sys.executable, os.path.abspath(__file__), "--pinger", str(port),
                   "--interval", str(interval), "--call-timeout", str(call_timeout)] + (
                       ["--fresh"] if fresh else [])
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        self.results = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            code, took, message = (line.rstrip("\n").split(" ", 2) + [""])[:3]
            self.results.append((None if code == "None" else int(code), float(took), message))

    def finish(self):
        """Stops it (once its call in flight ends) and sums up its calls."""
        self.process.stdin.close()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.reader.join(5)
        return summarize(self.results)


def pinger_main(port, interval, fresh, call_timeout):
    """The pinger's process: a call, a line on stdout, until stdin closes."""
    context = zmq.Context()
    client = RealClient(context, port)
    while True:
        try:
            code, took, message = client.ping(call_timeout)
        except zmq.ZMQError as error:
            code, took, message = None, 0.0, str(error)
        print(code, "%.4f" % took, " ".join(message.split())[:100], flush=True)
        if fresh:
            client.close()
        if select.select([sys.stdin], [], [], interval)[0]:
            break
    client.close()
    context.term()


def summarize(results):
    if not results:
        return "none made"
    ok = [took for code, took, _ in results if code == 0]
    text = "%d/%d ok" % (len(ok), len(results))
    if ok:
        text += ", max %s" % seconds(max(ok))
    failures = {}
    for code, _, message in results:
        if code != 0:
            count, first = failures.get(code, (0, message))
            failures[code] = (count + 1, first)
    for code, (count, message) in failures.items():
        text += ("; %d timed out" % count if code is None else
                 "; %d status %d (%s)" % (count, code, message[:80]))
    return text


def seconds(value):
    return "%.0f ms" % (value * 1000) if value < 1 else "%.1f s" % value


def megabytes(value):
    return "?" if value is None else "%.0f MB" % (value / 1e6)


# --- the probes ----------------------------------------------------------

def probe_nothing(duration):
    time.sleep(duration)
    return "nothing for %d s (the real client alone)" % duration, ""


@functools.lru_cache(maxsize=1)
def empty_tensors_message(tensors):
    """A request whose header declares `tensors` empty tensors (`3a 00`
    each), with no frames after it."""
    return frame(rpc_header(b"RunGraph", 1) + b"\x3a\x00" * tensors)


def probe_empty_tensors(server, tensors):
    sock = connect(server.port)
    sent = empty_tensors_message(tensors)
    sock.sendall(sent)
    try:
        reply = read_reply(sock, time.monotonic() + 30)
        note = "reply: %s" % reply.get(5, b"").decode("utf-8", "replace")[:90]
    except (OSError, ConnectionError) as error:
        note = "no reply (%s)" % error
    sock.close()
    return "%s tensors in one header, %s" % (f"{tensors:,}", megabytes(len(sent))), note


def probe_never_reader(server, message, limit_bytes, what):
    sock = connect(server.port)
    burst = message * (CHUNK // len(message))
    start = time.monotonic()
    sent, closed_at = flood(sock, burst, limit_bytes, 40)
    if closed_at is None:
        note = "not closed; open %.0f s after its first byte" % (time.monotonic() - start)
    else:
        note = "server closed it after %.1f s" % closed_at
    sock.close()
    return "%s %s, never reading" % (megabytes(sent), what), note


def probe_quadratic(server, context):
    tensor = field_bytes(7, field_varint(1, 1) + field_varint(3, (1 << 64) - 1))
    header = frame(field_bytes(1, b"m" * (512 << 10)) + field_varint(2, 1) + tensor * 40000)
    total = [0]
    replies = []
    lock = threading.Lock()

    def attacker():
        try:
            sock = connect(server.port)
            for _ in range(10):
                sock.sendall(header)
                with lock:
                    total[0] += len(header)
            got = 0
            deadline = time.monotonic() + 60
            try:
                while got < 10:
                    read_reply(sock, deadline)
                    got += 1
            except (OSError, ConnectionError):
                pass
            with lock:
                replies.append(got)
            sock.close()
        except (OSError, ConnectionError) as error:
            with lock:
                replies.append(repr(error))

    pinger = Pinger(server.port, interval=0.1)
    time.sleep(0.3)
    attackers = [threading.Thread(target=attacker) for _ in range(3)]
    for a in attackers:
        a.start()
    for a in attackers:
        a.join(90)
    time.sleep(0.3)
    during = pinger.finish()
    return ("3 conns x 10 headers (512 KiB method, 40,000 tensors of 2^64-1 B), %s" %
            megabytes(total[0]), "replies read per conn: %s" % replies, during)


def probe_invalid_utf8(server, count):
    sock = connect(server.port)
    message = frame(field_bytes(1, b"\xff") + field_varint(2, 1))
    assert len(message) == 7
    replies = [0]

    def drain():
        try:
            while True:
                data = sock.recv(1 << 16)
                if not data:
                    return
                replies[0] += len(data)
        except OSError:
            return

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    start = time.monotonic()
    batch = message * 10000
    sent = 0
    try:
        while sent < count and time.monotonic() - start < 60:
            sock.sendall(batch)
            sent += 10000
    except OSError:
        pass
    elapsed = time.monotonic() - start
    time.sleep(1)
    sock.shutdown(socket.SHUT_RDWR)
    sock.close()
    reader.join(5)
    return ("%s 5-byte headers, method invalid UTF-8 (%s)" % (f"{sent:,}", megabytes(sent * 7)),
            "sent in %.1f s; %s of replies read" % (elapsed, megabytes(replies[0])))


def greeting_flood(port, duration, hold, threads=2):
    """Bare greetings from `threads` threads for `duration` s: connect, greet,
    then close at once or, with `hold`, keep up to 2000 open."""
    counts = [0] * threads
    held = []
    lock = threading.Lock()
    stop = time.monotonic() + duration

    def one(i):
        g = greeting()
        while time.monotonic() < stop:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=2)
                sock.sendall(g)
                counts[i] += 1
                if hold:
                    with lock:
                        held.append(sock)
                        if len(held) > 2000:
                            held.pop(0).close()
                else:
                    sock.close()
            except OSError:
                time.sleep(0.01)

    workers = [threading.Thread(target=one, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(duration + 10)
    return sum(counts), held


def probe_greetings(server, duration):
    made, _ = greeting_flood(server.port, duration, hold=False)
    return "%s bare greetings in %d s (closed at once)" % (f"{made:,}", duration), ""


def probe_greetings_lockout(server, context, duration):
    pinger = Pinger(server.port, interval=0.2)
    time.sleep(0.5)
    holder = []

    def run_flood():
        holder.append(greeting_flood(server.port, duration, hold=True))

    flooder = threading.Thread(target=run_flood)
    flooder.start()
    time.sleep(1)
    # A client arriving during the flood, each call on a new connection.
    fresh = Pinger(server.port, interval=0.2, fresh=True, call_timeout=3)
    flooder.join(duration + 15)
    kept = pinger.finish()
    new = fresh.finish()
    made, held = holder[0] if holder else (0, [])
    for sock in held:
        sock.close()
    return ("%s bare greetings in %d s, held open (max_connections 32)" % (f"{made:,}", duration),
            "fresh DEALER each call: %s" % new, "connected before: " + kept)


def probe_trickle_descriptors(server, context, count):
    socks = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            sock.sendall(b"\xff")
            socks.append(sock)
        time.sleep(0.5)
        client = RealClient(context, server.port)
        results = [client.ping() for _ in range(5)]
        client.close()
        during = summarize(results)
    finally:
        opened = len(socks)
        for sock in socks:
            sock.close()
    return ("%s connections trickling a byte (soft nofile 1024)" % f"{opened:,}", "", during)


def probe_trickled_handshake(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    g = greeting()
    start = time.monotonic()
    closed_at, sent = None, 0
    for byte in g:
        try:
            sock.send(bytes([byte]))
            sent += 1
        except OSError:
            closed_at = time.monotonic() - start
            break
        if closed_by_peer(sock, 0.5):
            closed_at = time.monotonic() - start
            break
    if closed_at is None and closed_by_peer(sock, 5):
        closed_at = time.monotonic() - start
    sock.close()
    note = ("closed after %.1f s (%d bytes in)" % (closed_at, sent)) if closed_at is not None \
        else "still open after %.1f s (the whole greeting sent)" % (time.monotonic() - start)
    return "a greeting, one byte every 500 ms", note


# Name, before, server flags, the server's soft limit of open files, whether
# the probe calls with a real client itself (else one pings every 250 ms
# throughout), and the attack: function(server, zmq context) -> (what was
# sent, notes[, the real client's calls]).
PROBES = [
    ("0", "(a control: no attack)", [], None, False, lambda s, c: probe_nothing(5)),
    ("1a", "1.5 GB held, 1.4 GB kept after close", [], None, False,
     lambda s, c: probe_empty_tensors(s, 10_000_000)),
    ("1b", "killed (std::bad_alloc)", [], None, False,
     lambda s, c: probe_empty_tensors(s, 50_000_000)),
    ("2", "2.7 GB at 100 MB sent; abort at 204 MB", [], None, False,
     lambda s, c: probe_never_reader(s, b"\x00\x04\x10\x01\x3a\x00", 200 * MB,
                                     "of `00 04 10 01 3A 00`")),
    ("3", "30.6 s CPU; pings waited 21 s", [], None, True, probe_quadratic),
    ("4a", "1M protobuf error lines, 212 MB of log", [], None, False,
     lambda s, c: probe_invalid_utf8(s, 1_000_000)),
    ("4b", "an eviction line per greeting, ~3000 lines/s", [], None, False,
     lambda s, c: probe_greetings(s, 5)),
    ("5", "171 MB -> 4.71 GB RSS, 4.63 GB kept", [], None, False,
     lambda s, c: probe_never_reader(s, b"\x04\x07\x04PING\x00\x0a", 300 * MB,
                                     "of PING commands")),
    ("6a", "refused: serves at most 32 connections", ["--max_connections", "32"], None, True,
     lambda s, c: probe_greetings_lockout(s, c, 8)),
    ("6b", "locked out (Too many open files)", [], "1024:", True,
     lambda s, c: probe_trickle_descriptors(s, c, 1100)),
    ("7", "(deadline: --handshake_timeout, 10 s)", [], None, False,
     lambda s, c: probe_trickled_handshake(s)),
]

# What a probe builds before its server starts, so that building it does
# not count as the attack's time.
PREPARE = {
    "1a": lambda: empty_tensors_message(10_000_000),
    "1b": lambda: empty_tensors_message(50_000_000),
}

COLUMNS = ["probe", "sent", "peak RSS", "RSS after", "CPU s", "log lines", "log bytes",
           "log/s", "running", "real client during", "real client after", "notes", "before"]


def run_probe(args, context, probe):
    name, before, flags, nofile, own_client, attack = probe
    row = dict.fromkeys(COLUMNS, "")
    row["probe"], row["before"] = name, before
    server = None
    pinger = None
    try:
        if name in PREPARE:
            PREPARE[name]()
        server = Server(args.rill, flags, None if args.no_as_cap else 6_000_000_000, nofile)
        if not own_client:
            pinger = Pinger(server.port)
        result = attack(server, context)
        row["sent"], row["notes"] = result[0], result[1]
        if pinger is not None:
            row["real client during"] = pinger.finish()
            pinger = None
        if len(result) > 2:
            row["real client during"] = result[2]
        elapsed = time.monotonic() - server.t0
        time.sleep(1)  # what the server keeps once the connections are gone
        row["peak RSS"] = megabytes(proc_status(server.pid, "VmHWM"))
        if server.hwm0 is not None and proc_status(server.pid, "VmHWM") is not None:
            row["peak RSS"] += " (+%s)" % megabytes(proc_status(server.pid, "VmHWM") - server.hwm0)
        row["RSS after"] = megabytes(proc_status(server.pid, "VmRSS"))
        cpu = cpu_seconds(server.pid)
        row["CPU s"] = "?" if cpu is None else "%.2f" % (cpu - server.cpu0)
        lines, size = server.log_size()
        lines -= server.lines0
        size -= server.bytes0
        row["log lines"], row["log bytes"] = f"{lines:,}", f"{size:,}"
        row["log/s"] = "%.1f lines, %s B" % (lines / elapsed, f"{size / elapsed:,.0f}")
        row["running"] = "yes" if server.running() else "NO (%s)" % server.process.returncode
        if server.running():
            client = RealClient(context, server.port)
            code, took, message = client.ping()
            client.close()
            row["real client after"] = ("ok, %s" % seconds(took) if code == 0 else
                                        "timeout" if code is None else "status %s (%s)" % (code, message[:80]))
        else:
            row["notes"] += " log tail: " + server.log_text()[-200:].replace("\n", " | ")
    except Exception as error:  # noqa: BLE001 -- the row says what broke, the bench goes on
        row["notes"] = (row["notes"] + " ERROR: %r" % error).strip()
        if server is not None and not server.running():
            row["running"] = "NO (%s)" % server.process.returncode
    finally:
        if pinger is not None:
            pinger.finish()
        if server is not None:
            server.stop(os.path.join(args.keep_logs, "probe-%s.log" % name) if args.keep_logs
                        else None)
    return row


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rill", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "build", "cli", "rill"))
    parser.add_argument("--only", default="", help="probes to run, e.g. 1a,3,6b")
    parser.add_argument("--no-as-cap", action="store_true",
                        help="run the servers without the 6 GB address-space cap")
    parser.add_argument("--keep-logs", metavar="DIR",
                        help="copy each server's log to DIR/probe-NAME.log")
    parser.add_argument("--pinger", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--interval", type=float, default=0.25, help=argparse.SUPPRESS)
    parser.add_argument("--fresh", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--call-timeout", type=float, default=10.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pinger:
        return pinger_main(args.pinger, args.interval, args.fresh, args.call_timeout)
    if not os.access(args.rill, os.X_OK):
        sys.exit("stranger_probe: no rill binary at %s" % args.rill)
    # Probe 6 holds a few thousand sockets.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192) if hard != -1 else 8192, hard))
    if args.keep_logs:
        os.makedirs(args.keep_logs, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    context = zmq.Context()
    rows = []
    started = time.monotonic()
    for probe in PROBES:
        if only and probe[0] not in only:
            continue
        t = time.monotonic()
        row = run_probe(args, context, probe)
        rows.append(row)
        print("%-3s %5.1f s  %s" % (row["probe"], time.monotonic() - t,
                                    "  ".join("%s=%s" % (k, row[k]) for k in COLUMNS[1:] if row[k])),
              flush=True)
    context.term()
    print("\n%d probes in %.0f s\n" % (len(rows), time.monotonic() - started))
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in rows:
        print("| " + " | ".join(cell(row[c]) for c in COLUMNS) + " |")


if __name__ == "__main__":
    main()
