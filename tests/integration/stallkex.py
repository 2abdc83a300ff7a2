#!/usr/bin/env python3
"""An SSH server that stops in the middle of key exchange: it sends its banner
and a real KEXINIT, reads the client's key exchange init and then says nothing
more. Prints its port, serves one connection per accept until killed or
--seconds pass."""
import os, socket, struct, sys, time

def name_list(names):
    b = ",".join(names).encode()
    return struct.pack(">I", len(b)) + b

def kexinit():
    payload = bytes([20]) + os.urandom(16)
    payload += name_list(["curve25519-sha256", "curve25519-sha256@libssh.org",
                          "ecdh-sha2-nistp256", "diffie-hellman-group14-sha256"])
    payload += name_list(["ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-256"])
    for _ in range(2):
        payload += name_list(["aes128-ctr", "aes256-ctr"])
    for _ in range(2):
        payload += name_list(["hmac-sha2-256"])
    for _ in range(2):
        payload += name_list(["none"])
    payload += name_list([]) + name_list([]) + bytes([0]) + struct.pack(">I", 0)
    pad = 8 - (len(payload) + 5) % 8
    if pad < 4:
        pad += 8
    return struct.pack(">IB", len(payload) + pad + 1, pad) + payload + bytes(pad)

def main():
    seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 60
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    print(srv.getsockname()[1], flush=True)
    srv.settimeout(0.2)
    held = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        conn.sendall(b"SSH-2.0-stallkex\r\n" + kexinit())
        held.append(conn)  # read nothing more, answer nothing: the exchange stalls

if __name__ == "__main__":
    main()
