#!/usr/bin/env python3
"""A client of a boxgate connection master that speaks its frames by hand (t84):
hostile file-transfer requests, one per line of output as `NAME FRAME CODE`, or an old
master (--old-master SOCKET: a protocol 2 greeting, then prints the frames it is sent),
or a client that closes its command and goes at once (--close-and-go SOCKET PID: the
master, stopped meanwhile, writes to it before it reads the CLOSE)."""
import array
import os
import signal
import socket
import struct
import sys
import time


def frame(t, p=b""):
    return t.encode() + struct.pack(">I", len(p)) + p


def lstr(b):
    return struct.pack(">I", len(b)) + b


class Conn:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def read(self):
        while True:
            if len(self.buf) >= 5:
                n = struct.unpack(">I", self.buf[1:5])[0]
                if len(self.buf) >= 5 + n:
                    t, p = chr(self.buf[0]), self.buf[5:5 + n]
                    self.buf = self.buf[5 + n:]
                    return t, p
            try:
                d = self.s.recv(65536)
            except OSError:
                d = b""
            if not d:
                return None, b""
            self.buf += d


def res(c, name):
    while True:
        t, p = c.read()
        if t == "C":
            c.s.sendall(frame("U"))
        if t in (None, "R"):
            break
    code = struct.unpack(">i", p[:4])[0] if t == "R" else "none"
    print(name, t or "closed", code, flush=True)


def greeted(path):
    """A client connected to the master at path, its HELLO read."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(path)
    c = Conn(s)
    t, _ = c.read()
    assert t == "H", t
    return s, c


def hostile(path, repo):
    s, c = greeted(path)
    s.sendall(frame("P", b"\0\0"))
    res(c, "short-op")
    put = lambda name: struct.pack(">IQ", 8, 0) + struct.pack(">QIIQI", 3, 0o644, 0, 0, 0) + lstr(
        (repo + "/" + name).encode())
    s.sendall(frame("P", put("nofd.tmp")))
    res(c, "put-without-fd")
    for name, fd in (("dirfd.tmp", os.open("/", os.O_RDONLY)),
                     ("wronlyfd.tmp", os.open(os.devnull, os.O_WRONLY)),
                     ("sockfd.tmp", s.fileno())):
        s.sendmsg([frame("P", put(name))],
                  [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
        res(c, "put-" + name.split(".")[0])
    two = [os.open(os.devnull, os.O_RDONLY), os.open(os.devnull, os.O_RDONLY)]
    s.sendmsg([frame("P", struct.pack(">IQ", 1, 0) + lstr(repo.encode()))],
              [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", two))])
    res(c, "lstat-with-two-fds")
    s.sendall(frame("P", struct.pack(">IQ", 1, 0) + lstr(b"/root/a\0b")))
    res(c, "path-with-nul")
    s.sendall(frame("P", struct.pack(">IQ", 99, 0) + lstr(b"/root")))
    res(c, "unknown-op")
    s.sendall(frame("P", struct.pack(">IQ", 1, 0) + struct.pack(">I", 1 << 30)))
    res(c, "path-longer-than-frame")
    s.sendall(frame("P", struct.pack(">IQ", 9, 0) + struct.pack(">QI", 0, 0) + lstr(repo.encode())))
    res(c, "get-a-directory")
    s.sendall(frame("P", struct.pack(">IQ", 1, 0) + lstr(b"/" + b"x" * 70000)))
    res(c, "lstat-70000-byte-path")
    s.sendall(b"P" + struct.pack(">I", 0xFFFFFFF0))
    res(c, "frame-longer-than-max")


def old_master(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(path)
    os.chmod(path, 0o600)
    s.listen(4)
    print("listening", flush=True)
    a, _ = s.accept()
    hello = struct.pack(">IIQQ", 2, os.getpid(), 60000, 0)
    for f in (b"g1", b"root@x:22", b"", b"SHA256:x"):
        hello += struct.pack(">H", len(f)) + f
    a.sendall(frame("H", hello))
    a.settimeout(10)
    c = Conn(a)
    t, _ = c.read()
    print("got", t or "closed", flush=True)
    os.unlink(path)


def close_and_go(path, pid):
    """A command started (one that ends when its stdin closes), then CLOSE and gone while
    the master is stopped: it wakes with a keepalive frame due (keepalive_s = 1) that it
    writes before it reads, to a client that is gone."""
    s, c = greeted(path)
    s.sendall(frame("X", struct.pack(">II", 1, 0) + b"cat >/dev/null"))
    while True:
        t, p = c.read()
        if t in (None, "S", "F", "T"):
            break
    print("started", t or "closed", flush=True)
    os.kill(pid, signal.SIGSTOP)
    try:
        while open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] != "T":
            time.sleep(0.01)
        s.sendall(frame("W", struct.pack(">I", 1)))
        s.close()
        # more than keepalive_s (1) since its last frame: one is due as it wakes
        time.sleep(1.5)
    finally:
        os.kill(pid, signal.SIGCONT)
    # then what the master says to the next client: idle (H) once done with this one
    end = time.time() + 20
    while True:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(10)
            s.connect(path)
            t, _ = Conn(s).read()
            s.close()
        except OSError:
            t = None
        if t != "B" or time.time() > end:
            break
        time.sleep(0.05)
    print("after", {"H": "idle", "B": "busy"}.get(t, "gone"), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--old-master":
        old_master(sys.argv[2])
    elif sys.argv[1] == "--close-and-go":
        close_and_go(sys.argv[2], int(sys.argv[3]))
    else:
        hostile(sys.argv[1], sys.argv[2])
