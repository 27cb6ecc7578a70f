# What the agent tries from its own shell against the services people and
# the node rely on (docs/security.md), run inside a sandbox as the agent's
# uid by tests/integration/test-boot.sh.  Prints one line per attempt,
# "<what> <target> ok|refused <why>", and never stops at a refusal.
#   python3 - signals         signal and ptrace each protected service
#   python3 - bind SECONDS    keep trying to take their ports and the
#                             control socket for SECONDS (a restart may be
#                             under way meanwhile); prints the successes
#   python3 - noise SECONDS   paint random squares on the screen (a recording
#                             of it grows as fast as it can)
#   python3 - xclients        list the display's clients (X-Resource)
#   python3 - xkill-new FILE  XKillClient every client not in FILE, as
#                             xclients wrote it (the display is shared: X
#                             lets any client do this to any other)
import ctypes
import os
import signal
import socket
import struct
import sys
import time

SERVICES = ("Xvfb", "cloche-vnc", "mcp-desktop", "cloche-rec")
PORTS = (6080, 5900, 8100, 8070)
ADDRS = ("0.0.0.0", "127.0.0.1", "10.0.2.15")
CONTROL = "/run/cloche/control/:0"
PTRACE_ATTACH, PTRACE_DETACH = 16, 17


def pids(name):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/comm") as f:
                    if f.read().strip() == name[:15]:
                        out.append(int(p))
            except OSError:
                pass
    return out


def signals():
    libc = ctypes.CDLL(None, use_errno=True)
    for name in SERVICES:
        found = pids(name)
        if not found:
            print(f"find {name} refused not-running")
        for pid in found:
            for sig in (signal.SIGTERM, signal.SIGKILL, signal.SIGSTOP, signal.SIGUSR1):
                try:
                    os.kill(pid, sig)
                    print(f"kill-{sig.name} {name} ok")
                except OSError as e:
                    print(f"kill-{sig.name} {name} refused {e.strerror.replace(' ', '-')}")
            if libc.ptrace(PTRACE_ATTACH, pid, 0, 0) == 0:
                print(f"ptrace {name} ok")
                libc.ptrace(PTRACE_DETACH, pid, 0, 0)
            else:
                print(f"ptrace {name} refused {os.strerror(ctypes.get_errno()).replace(' ', '-')}")


def try_bind(family, addr):
    s = socket.socket(family, socket.SOCK_STREAM)
    try:
        if family == socket.AF_INET:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.bind(addr)
        s.listen()
        return True
    except OSError:
        return False
    finally:
        s.close()


def bind(seconds):
    end = time.monotonic() + seconds
    tries = 0
    while time.monotonic() < end:
        for port in PORTS:
            for addr in ADDRS:
                tries += 1
                if try_bind(socket.AF_INET, (addr, port)):
                    print(f"bind {addr}:{port} ok")
        tries += 2
        if try_bind(socket.AF_UNIX, CONTROL):
            print(f"bind {CONTROL} ok")
        c = socket.socket(socket.AF_UNIX)
        try:
            c.connect(CONTROL)
            print(f"connect {CONTROL} ok")
        except OSError:
            pass
        finally:
            c.close()
        time.sleep(0.005)
    print(f"tries {tries}")


class X:
    """Just enough of the X11 protocol, spoken on the display's socket."""

    def __init__(self):
        display = os.environ.get("DISPLAY", ":0").lstrip(":").split(".")[0]
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(f"/tmp/.X11-unix/X{display}")
        self.s.sendall(b"l\0" + struct.pack("<HHHH", 11, 0, 0, 0) + b"\0\0")
        head = self.read(8)
        if head[0] != 1:
            raise OSError(f"X refused the connection: {self.read(head[1])!r}")
        body = self.read(struct.unpack_from("<H", head, 6)[0] * 4)
        self.base = struct.unpack_from("<I", body, 4)[0]
        vendor, formats = struct.unpack_from("<H", body, 16)[0], body[21]
        screen = 32 + vendor + (-vendor % 4) + 8 * formats
        self.root = struct.unpack_from("<I", body, screen)[0]
        self.width, self.height = struct.unpack_from("<HH", body, screen + 20)
        self.depth = body[screen + 38]

    def read(self, n):
        out = b""
        while len(out) < n:
            chunk = self.s.recv(n - len(out))
            if not chunk:
                raise OSError("X closed the connection")
            out += chunk
        return out

    def send(self, opcode, data1, body=b""):
        body += b"\0" * (-len(body) % 4)
        self.s.sendall(struct.pack("<BBH", opcode, data1, 1 + len(body) // 4) + body)

    def reply(self):
        """The next reply; errors before it are counted, events skipped."""
        errors = 0
        while True:
            pkt = self.read(32)
            if pkt[0] == 0:
                errors += 1
            elif pkt[0] == 1:
                return pkt + self.read(struct.unpack_from("<I", pkt, 4)[0] * 4), errors

    def extension(self, name):
        self.send(98, 0, struct.pack("<HH", len(name), 0) + name)
        pkt, _ = self.reply()
        if not pkt[8]:
            raise OSError(f"no {name.decode()} extension")
        return pkt[9]

    def clients(self):
        """The resource bases of the display's clients (X-Resource)."""
        res = self.extension(b"X-Resource")
        self.send(res, 0, struct.pack("<BBH", 1, 2, 0))  # QueryVersion 1.2
        self.reply()
        self.send(res, 1)  # QueryClients
        pkt, _ = self.reply()
        n = struct.unpack_from("<I", pkt, 8)[0]
        return {struct.unpack_from("<I", pkt, 32 + 8 * i)[0] for i in range(n)} - {0, self.base}

    def kill(self, base, tries=64):
        """KillClient names a client by any resource it owns: try the
        first ids a client makes, until one is not refused."""
        for i in range(1, tries + 1):
            self.send(113, 0, struct.pack("<I", base | i))
        self.send(43, 0)  # GetInputFocus: a reply after all of them
        _, errors = self.reply()
        return tries - errors


def noise(seconds):
    """Paints random 128x128 squares over the screen for SECONDS: what an
    encoder cannot compress, so that a recording grows as fast as it can."""
    x = X()
    gc = x.base | 0x100
    x.send(55, 0, struct.pack("<III", gc, x.root, 0))  # CreateGC
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        for _ in range(8):
            px, py = (int.from_bytes(os.urandom(2), "little") % max(1, d - 128)
                      for d in (x.width, x.height))
            x.send(72, 2, struct.pack("<IIHHhhBBxx", x.root, gc, 128, 128, px, py, 0, x.depth)
                   + os.urandom(128 * 128 * 4))  # PutImage, ZPixmap
            n += 1
        x.send(43, 0)  # GetInputFocus: let the server catch up
        x.reply()
        time.sleep(0.02)
    print(f"noise squares {n}")


def xclients():
    for base in sorted(X().clients()):
        print(f"{base:#x}")


def xkill_new(before):
    """Kill the connections made since `xclients` wrote BEFORE.  (X-Resource
    names a client's pid too, but the X server learns it from SO_PEERCRED,
    which gVisor answers with the server's own.)"""
    with open(before) as f:
        old = {int(line, 16) for line in f if line.strip()}
    x = X()
    new = sorted(x.clients() - old)
    if not new:
        print("xkill new-clients refused none")
    for base in new:
        print(f"xkill client-{base:#x} {'ok' if x.kill(base) else 'refused no-resource'}")


if __name__ == "__main__":
    if sys.argv[1] == "signals":
        signals()
    elif sys.argv[1] == "noise":
        noise(float(sys.argv[2]))
    elif sys.argv[1] == "xclients":
        xclients()
    elif sys.argv[1] == "xkill-new":
        xkill_new(sys.argv[2])
    else:
        bind(float(sys.argv[2]))
