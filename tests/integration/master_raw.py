#!/usr/bin/env python3
"""A client of a boxgate connection master that speaks its frames by hand (t84):
hostile file-transfer requests, one per line of output as `NAME FRAME CODE`, or an old
master (--old-master SOCKET: a protocol 2 greeting, then prints the frames it is sent)."""
import array
import os
import socket
import struct
import sys


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


def hostile(path, repo):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(20)
    s.connect(path)
    c = Conn(s)
    t, _ = c.read()
    assert t == "H", t
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


if __name__ == "__main__":
    if sys.argv[1] == "--old-master":
        old_master(sys.argv[2])
    else:
        hostile(sys.argv[1], sys.argv[2])
