# A page's viewer as cloche-vnc sees it, for as long as the server keeps it:
# a WebSocket to /websockify with the secret and a viewer key (as noVNC in
# cloche-vnc's page opens it), then RFB 3.8 up to ServerInit, then it only
# reads.  The secret is the VNC password too (DES from libcrypto, as the
# VNC Authentication of RFB 3.8 has it).  Prints the handshake's HTTP
# status as soon as it has it.
#   python3 tests/lib/ws-viewer.py PORT SECRET KEY
import ctypes
import os
import socket
import struct
import sys

port, secret, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall((f"GET /websockify?secret={secret}&viewer={key} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Origin: http://127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
           "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").encode())
head = b""
while b"\r\n\r\n" not in head:
    c = s.recv(1)
    if not c:
        sys.exit(1)
    head += c
print(head[9:12].decode(), flush=True)
if head[9:12] != b"101":
    sys.exit(1)
buf, stream = b"", b""


def need(n):
    global buf
    while len(buf) < n:
        c = s.recv(65536)
        if not c:
            sys.exit(0)  # the server closed it
        buf += c


def frame():
    global buf
    need(2)
    n, off = buf[1] & 127, 2
    if n == 126:
        need(4)
        n, off = struct.unpack(">H", buf[2:4])[0], 4
    elif n == 127:
        need(10)
        n, off = struct.unpack(">Q", buf[2:10])[0], 10
    need(off + n)
    p, buf = buf[off:off + n], buf[off + n:]
    return p


def rfb(n):
    global stream
    while len(stream) < n:
        stream += frame()
    out, stream = stream[:n], stream[n:]
    return out


def send(p):
    m = os.urandom(4)
    s.sendall(bytes([0x82, 0x80 | len(p)]) + m + bytes(b ^ m[i % 4] for i, b in enumerate(p)))


def vnc_auth(challenge, password):
    """Each 8-byte half of the challenge DES-encrypted under the password's
    first 8 bytes, each byte's bits mirrored."""
    crypto = ctypes.CDLL("libcrypto.so.3")
    pw = password.encode()[:8].ljust(8, b"\0")
    key = (ctypes.c_ubyte * 8)(*(int(f"{b:08b}"[::-1], 2) for b in pw))
    sched = (ctypes.c_ubyte * 256)()
    crypto.DES_set_key_unchecked(key, sched)
    out = b""
    for half in (challenge[:8], challenge[8:]):
        src, dst = (ctypes.c_ubyte * 8)(*half), (ctypes.c_ubyte * 8)()
        crypto.DES_ecb_encrypt(src, dst, sched, 1)
        out += bytes(dst)
    return out


rfb(12)
send(b"RFB 003.008\n")
types = rfb(rfb(1)[0])
if 2 in types:
    send(b"\x02")
    send(vnc_auth(rfb(16), secret))
elif 1 in types:
    send(b"\x01")
else:
    sys.exit(2)
if rfb(4) != b"\0\0\0\0":
    sys.exit(3)
send(b"\x01")  # ClientInit, shared
s.settimeout(None)
while True:
    frame()
