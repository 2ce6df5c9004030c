# SPDX-License-Identifier: MIT
"""cachetest.py - what the TTL cache's Python tests share.

Starting rota-ttl-cache (and redis-server, for the differential test) on a
free loopback port in a temporary directory, raw RESP connections, reading
one reply's exact bytes, and a small pass/fail tally that ends a test with
"N passed, N failed".  Standard library only.
"""
import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77  # CTest's SKIP_RETURN_CODE


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL:", what, flush=True)
        return ok

    def equal(self, got, want, what):
        return self.check(got == want, "%s: got %r, want %r" % (what, got, want))

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        sys.exit(0 if self.failed == 0 and self.passed > 0 else 1)


class Server:
    """A server process on 127.0.0.1 with its own temporary directory.
    A test that dies half way still stops its servers (atexit)."""

    running = []

    def __init__(self, argv, port, tmp, proc, host="127.0.0.1"):
        self.argv, self.port, self.tmp, self.proc = argv, port, tmp, proc
        self.host = host  # where connect() goes
        Server.running.append(self)

    @classmethod
    def cache(cls, binary, *flags, preexec=None, env=None):
        """The cache on a free port (--port 0 first: a --port in `flags`
        overrides it), on the address of its --bind; `env`: variables
        added to its environment."""
        tmp = tempfile.mkdtemp(prefix="ttl-cache-")
        out = open(os.path.join(tmp, "out"), "w+")
        err = open(os.path.join(tmp, "err"), "w+")
        argv = [binary, "--port", "0"] + [str(f) for f in flags]
        proc = subprocess.Popen(argv, stdout=out, stderr=err,
                                preexec_fn=preexec,
                                env=dict(os.environ, **(env or {})))
        port = host = None
        for _ in range(600):  # 30 s at most (valgrind on a busy machine)
            out.seek(0)
            m = re.search(r"listening on ([0-9.]+):(\d+)", out.read())
            if m:
                host, port = m.group(1), int(m.group(2))
                if host == "0.0.0.0":
                    host = "127.0.0.1"
                break
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        if port is None:
            err.seek(0)
            proc.kill()
            raise RuntimeError("rota-ttl-cache did not start: " + err.read())
        return cls(argv, port, tmp, proc, host)

    @classmethod
    def redis(cls, *extra, bind="127.0.0.1"):
        """redis-server with no persistence, or None when not installed;
        `extra`: more of its options (--requirepass pw), `bind`: its
        address (a server bound elsewhere is not probed for readiness
        by a connection, which protected mode would refuse: its log is
        read instead)."""
        exe = shutil.which("redis-server")
        if exe is None:
            return None
        tmp = tempfile.mkdtemp(prefix="redis-diff-")
        log = os.path.join(tmp, "log")
        for _ in range(20):
            port = free_port()
            argv = [exe, "--port", str(port), "--bind", bind,
                    "--save", "", "--appendonly", "no", "--dir", tmp,
                    "--daemonize", "no", "--logfile", log] + list(extra)
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            for _ in range(100):
                try:
                    if bind == "127.0.0.1":
                        socket.create_connection((bind, port), 0.2).close()
                    elif "Ready to accept" not in open(log).read():
                        raise OSError("not ready")
                    return cls(argv, port, tmp, proc, bind)
                except OSError:
                    if proc.poll() is not None:
                        break
                    time.sleep(0.05)
            proc.kill()
            proc.wait()
        raise RuntimeError("redis-server did not start")

    def connect(self, timeout=5.0):
        return Conn(self.port, timeout, self.host)

    def stop(self):
        """SIGTERM, wait; the exit status (None if it had to be killed)."""
        if self in Server.running:
            Server.running.remove(self)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            status = None
        if status != 0:  # show why (a sanitizer report, say)
            err = os.path.join(self.tmp, "err")
            if os.path.exists(err):
                with open(err) as f:
                    sys.stdout.write(f.read()[-20000:])
        shutil.rmtree(self.tmp, ignore_errors=True)
        return status

    def stderr(self):
        with open(os.path.join(self.tmp, "err")) as f:
            return f.read()

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kb(self, field="VmRSS"):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0


@atexit.register
def _stop_all():
    for srv in list(Server.running):
        srv.stop()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def encode(*args):
    """One command as a RESP array of bulk strings."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, int):
            a = str(a)
        if isinstance(a, str):
            a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port, timeout=5.0, host="127.0.0.1", source=None):
        self.sock = socket.create_connection(
            (host, port), timeout,
            source_address=(source, 0) if source else None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        d = self.sock.recv(1 << 16)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def _line(self, pos):
        while True:
            i = self.buf.find(b"\r\n", pos)
            if i >= 0:
                return i
            self._fill()

    def _end(self, pos):
        """Where the reply starting at pos ends (reading as needed)."""
        i = self._line(pos)
        kind, head = self.buf[pos:pos + 1], self.buf[pos + 1:i]
        if kind in (b"+", b"-", b":"):
            return i + 2
        if kind == b"$":
            n = int(head)
            if n < 0:
                return i + 2
            while len(self.buf) < i + 2 + n + 2:
                self._fill()
            return i + 2 + n + 2
        if kind == b"*":
            n = int(head)
            p = i + 2
            for _ in range(max(n, 0)):
                p = self._end(p)
            return p
        raise ValueError("not a RESP reply: %r" % self.buf[pos:pos + 40])

    def reply(self):
        """The exact bytes of the next reply."""
        end = self._end(0)
        r, self.buf = self.buf[:end], self.buf[end:]
        return r

    def call(self, *args):
        self.send(encode(*args))
        return self.reply()

    def read_all(self, timeout=3.0):
        """Everything until the server closes; b'<open>' appended if it
        did not close within `timeout` seconds."""
        self.sock.settimeout(timeout)
        out, self.buf = self.buf, b""
        try:
            while True:
                d = self.sock.recv(1 << 16)
                if not d:
                    return out
                out += d
        except socket.timeout:
            return out + b"<open>"
        except ConnectionResetError:
            return out + b"<reset>"

    def close(self):
        self.sock.close()


def raw_exchange(port, data, timeout=1.0, half_close=False,
                 host="127.0.0.1", source=None):
    """Send data on a fresh connection and return all it gets back."""
    c = Conn(port, host=host, source=source)
    try:
        c.send(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server closed early: read what it said
    if half_close:
        c.sock.shutdown(socket.SHUT_WR)
    r = c.read_all(timeout)
    c.close()
    return r


def non_loopback_address():
    """An IPv4 address of this machine that is not on loopback (a
    connection from it to itself has a non-loopback peer), or None."""
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True,
                             text=True, timeout=5).stdout.split()
    except (OSError, subprocess.SubprocessError):
        out = []
    for a in out:
        if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", a) and \
                not a.startswith("127."):
            try:  # usable: it can be bound
                s = socket.socket()
                s.bind((a, 0))
                s.close()
                return a
            except OSError:
                continue
    return None


def decode(reply):
    """A RESP reply as Python values (bytes, int, None, list, Exception)."""
    def parse(pos):
        i = reply.index(b"\r\n", pos)
        kind, head = reply[pos:pos + 1], reply[pos + 1:i]
        if kind == b"+":
            return head, i + 2
        if kind == b"-":
            return Exception(head.decode("latin1")), i + 2
        if kind == b":":
            return int(head), i + 2
        if kind == b"$":
            n = int(head)
            if n < 0:
                return None, i + 2
            return reply[i + 2:i + 2 + n], i + 4 + n
        n = int(head)
        items, p = [], i + 2
        for _ in range(n):
            v, p = parse(p)
            items.append(v)
        return items, p
    return parse(0)[0]
