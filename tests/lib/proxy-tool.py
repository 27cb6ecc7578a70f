#!/usr/bin/env python3
"""Both ends of cloche-proxy for tests/integration/test-proxy.sh, with the
Python standard library only: an upstream HTTP/1.1 server (echo, SSE, big
bodies, close-delimited answers, slow answers, a WebSocket echo) and raw
clients (hand-written bytes, pipelining, WebSockets, slow-loris).

    proxy-tool.py serve PORT
    proxy-tool.py raw PORT          (request bytes on stdin; prints the answer)
    proxy-tool.py pipeline PORT HOST TOKEN
    proxy-tool.py sse PORT HOST TOKEN
    proxy-tool.py ws PORT HOST TOKEN MESSAGES [HOLD_S INTERVAL_S]
    proxy-tool.py ws-many PORT HOST TOKEN COUNT PROXY_PID
    proxy-tool.py slowloris PORT HOST CONNS SECONDS
"""
import base64
import hashlib
import http.server
import json
import os
import socket
import socketserver
import struct
import sys
import threading
import time

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC11B85"


# ---- the upstream ----------------------------------------------------------

class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self):
        te = self.headers.get("Transfer-Encoding", "")
        h = hashlib.sha256()
        n = 0
        if te.lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    break
                left = size
                while left:
                    b = self.rfile.read(min(left, 65536))
                    h.update(b)
                    n += len(b)
                    left -= len(b)
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length", "0"))
            while left:
                b = self.rfile.read(min(left, 65536))
                if not b:
                    break
                h.update(b)
                n += len(b)
                left -= len(b)
        return n, h.hexdigest()

    def reply(self, code, data, ctype="application/json", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        self.do_GET()

    def do_PUT(self):
        self.do_GET()

    def do_GET(self):
        if getattr(self, "doomed", False):
            # /once said so: this connection's next request is dropped
            # unanswered, as a server that timed the connection out would.
            self.close_connection = True
            return
        path, _, query = self.path.partition("?")
        q = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        if path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
            return self.websocket()
        if path == "/ws-ends":
            with ENDS_LOCK:
                return self.reply(200, json.dumps(ENDS).encode())
        n, sha = self.body()
        if path == "/echo":
            out = {"method": self.command, "target": self.path,
                   "headers": [[k, v] for k, v in self.headers.items()],
                   "body_len": n, "body_sha256": sha}
            return self.reply(200, json.dumps(out).encode())
        if path == "/sse":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(int(q.get("n", "3"))):
                ev = ("data: %d %f\n\n" % (i, time.time())).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.flush()
                time.sleep(int(q.get("ms", "300")) / 1000)
            self.wfile.write(b"0\r\n\r\n")
            return
        if path == "/big":
            size = int(q.get("mb", "1")) << 20
            block = hashlib.sha256(b"cloche").digest() * 2048  # 64 KiB
            h = hashlib.sha256()
            left = size
            while left:
                h.update(block[:min(left, len(block))])
                left -= min(left, len(block))
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.send_header("X-Sha256", h.hexdigest())
            self.end_headers()
            left = size
            while left:
                self.wfile.write(block[:min(left, len(block))])
                left -= min(left, len(block))
            return
        if path == "/close":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close")
            self.wfile.flush()
            self.close_connection = True
            return
        if path == "/cookies":
            # What a sandbox's server might send: a cookie of its own host,
            # one for the whole domain, and one named like the proxy's.
            self.send_response(200)
            self.send_header("Set-Cookie", "own=1; Path=/; HttpOnly")
            self.send_header("Set-Cookie", "wide=1; Path=/; Domain=" + q.get("domain", "x"))
            self.send_header("Set-Cookie", "cloche_token=st1.forged.x; Path=/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path == "/once":
            self.doomed = True
            return self.reply(200, b"once\n", "text/plain")
        if path == "/slow":
            time.sleep(int(q.get("ms", "1000")) / 1000)
            return self.reply(200, b"slow\n", "text/plain")
        self.reply(404, b'{"where":"upstream"}')

    def websocket(self):
        key = self.headers["Sec-WebSocket-Key"]
        acc = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", acc)
        self.end_headers()
        self.wfile.flush()
        while True:
            f = ws_read(self.rfile)
            if f is None:
                return
            if f[0] == 8:
                break
            ws_send(self.wfile, f[1], f[0], mask=False)
            self.wfile.flush()
        # The closing handshake: answer it, then see how the proxy ends the
        # connection (a FIN here would leave this end a TIME_WAIT).
        try:
            ws_send(self.wfile, f[1], 8, mask=False)
            self.wfile.flush()
            end = "fin" if self.rfile.read(1) == b"" else "data"
        except OSError:
            end = "reset"
        with ENDS_LOCK:
            ENDS[end] = ENDS.get(end, 0) + 1


# How WebSockets closed by their client ended at this end: {"reset": n, "fin": n}.
ENDS = {}
ENDS_LOCK = threading.Lock()


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 2048

    def handle_error(self, request, client_address):
        pass  # resets from drains and hostile clients are the point of the test


# ---- WebSocket frames -------------------------------------------------------

def ws_send(w, data, op=1, mask=True):
    hdr = bytes([0x80 | op])
    n = len(data)
    mbit = 0x80 if mask else 0
    if n < 126:
        hdr += bytes([mbit | n])
    elif n < 65536:
        hdr += bytes([mbit | 126]) + struct.pack(">H", n)
    else:
        hdr += bytes([mbit | 127]) + struct.pack(">Q", n)
    if mask:
        m = os.urandom(4)
        data = bytes(b ^ m[i % 4] for i, b in enumerate(data))
        hdr += m
    w.write(hdr + data)


def read_exact(r, n):
    b = b""
    while len(b) < n:
        c = r.read(n - len(b))
        if not c:
            return None
        b += c
    return b


def ws_read(r):
    h = read_exact(r, 2)
    if h is None:
        return None
    op, n = h[0] & 0x0F, h[1] & 0x7F
    masked = h[1] & 0x80
    if n == 126:
        n = struct.unpack(">H", read_exact(r, 2))[0]
    elif n == 127:
        n = struct.unpack(">Q", read_exact(r, 8))[0]
    m = read_exact(r, 4) if masked else None
    data = read_exact(r, n) if n else b""
    if data is None:
        return None
    if m:
        data = bytes(b ^ m[i % 4] for i, b in enumerate(data))
    return op, data


class WsClient:
    def __init__(self, port, host, token, path="/ws"):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
               "Authorization: Bearer %s\r\n\r\n" % (path, host, key, token))
        self.s.sendall(req.encode())
        self.r = self.s.makefile("rb")
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            c = self.r.read(1)
            if not c:
                raise RuntimeError("closed during the handshake: %r" % head)
            head += c
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError("no 101: %r" % head[:200])

    def echo(self, data):
        w = self.s.makefile("wb")
        ws_send(w, data)
        w.flush()
        f = ws_read(self.r)
        return f is not None and f[1] == data

    def close(self):
        self.s.close()

    def close_handshake(self):
        """A close frame, the server's answer, then our FIN."""
        w = self.s.makefile("wb")
        ws_send(w, b"\x03\xe8", 8)
        w.flush()
        f = ws_read(self.r)
        self.s.shutdown(socket.SHUT_WR)
        return f is not None and f[0] == 8


# ---- clients ------------------------------------------------------------------

def raw(port):
    data = sys.stdin.buffer.read()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(data)
    out = b""
    try:
        while True:
            c = s.recv(65536)
            if not c:
                break
            out += c
    except socket.timeout:
        out += b"\n[no close within 10 s]"
    sys.stdout.buffer.write(out)


def pipeline(port, host, token):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    req = "".join("GET /echo?n=%d HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n"
                  % (i, host, token) for i in range(3))
    s.sendall(req.encode())
    r = s.makefile("rb")
    seen = []
    for _ in range(3):
        line = r.readline()
        length = 0
        while True:
            h = r.readline()
            if h in (b"\r\n", b""):
                break
            if h.lower().startswith(b"content-length:"):
                length = int(h.split(b":")[1])
        body = json.loads(read_exact(r, length))
        seen.append((line.split()[1].decode(), body["target"]))
    print(json.dumps(seen))


def sse(port, host, token):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(("GET /sse?n=5&ms=400 HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"
               "Accept: text/event-stream\r\n\r\n" % (host, token)).encode())
    t0 = time.time()
    first = None
    buf = b""
    while b"\r\n0\r\n\r\n" not in buf:
        c = s.recv(65536)
        if not c:
            break
        buf += c
        if first is None and b"data: 0" in buf:
            first = time.time() - t0
    print(json.dumps({"first_s": first, "total_s": time.time() - t0,
                      "events": buf.count(b"data: ")}))


def ws(port, host, token, n, hold=0, interval=3):
    c = WsClient(port, host, token)
    sent = 0
    try:
        ok = all(c.echo(b"m%d" % i * (i + 1)) for i in range(n))
        t_end = time.time() + hold
        while ok and time.time() < t_end:
            time.sleep(interval)
            ok = c.echo(b"keep %d" % sent)
            sent += 1
    except OSError:
        ok = False
    c.close()
    print(json.dumps({"ok": ok, "held_s": hold, "messages": n + sent}))


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def ws_many(port, host, token, count, pid):
    before = rss_kib(pid)
    conns = []
    for _ in range(count):
        conns.append(WsClient(port, host, token))
    time.sleep(0.5)
    during = rss_kib(pid)
    ok = sum(1 for c in conns if c.echo(b"hello"))
    after_echo = rss_kib(pid)
    for c in conns:
        c.close()
    print(json.dumps({"open": len(conns), "echoed": ok, "rss_before_kib": before,
                      "rss_open_kib": during, "rss_after_echo_kib": after_echo}))


def slowloris(port, host, conns, seconds):
    socks = []
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port), timeout=seconds + 15)
        s.sendall(b"GET /echo HTTP/1.1\r\nHost: " + host.encode() + b"\r\n")
        socks.append(s)
    t0 = time.time()
    answers = {}

    def drip(s):
        try:
            while time.time() - t0 < seconds:
                s.sendall(b"X")
                time.sleep(1)
        except OSError:
            pass
        try:
            s.settimeout(15)
            a = s.recv(100)
            answers[s.fileno()] = a.split(b" ")[1].decode() if a.startswith(b"HTTP/1.1") else "closed"
        except OSError:
            answers[s.fileno()] = "error"

    ts = [threading.Thread(target=drip, args=(s,)) for s in socks]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps({"answers": sorted(answers.values()), "after_s": round(time.time() - t0, 1)}))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        srv = Server(("127.0.0.1", int(args[0])), Upstream)
        srv.serve_forever()
    elif cmd == "raw":
        raw(int(args[0]))
    elif cmd == "pipeline":
        pipeline(int(args[0]), args[1], args[2])
    elif cmd == "sse":
        sse(int(args[0]), args[1], args[2])
    elif cmd == "ws":
        ws(int(args[0]), args[1], args[2], int(args[3]),
           float(args[4]) if len(args) > 4 else 0, float(args[5]) if len(args) > 5 else 3)
    elif cmd == "ws-close":
        c = WsClient(int(args[0]), args[1], args[2])
        ok = c.echo(b"before the close") and c.close_handshake()
        c.close()
        print(json.dumps({"ok": ok}))
    elif cmd == "ws-many":
        ws_many(int(args[0]), args[1], args[2], int(args[3]), int(args[4]))
    elif cmd == "slowloris":
        slowloris(int(args[0]), args[1], int(args[2]), int(args[3]))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
