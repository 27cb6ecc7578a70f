# What the agent tries from its own shell against the services people and
# the node rely on (docs/security.md), run inside a sandbox as the agent's
# uid by tests/integration/test-boot.sh.  Prints one line per attempt,
# "<what> <target> ok|refused <why>", and never stops at a refusal.
#   python3 - signals         signal and ptrace each protected service
#   python3 - bind SECONDS    keep trying to take their ports and the
#                             control socket for SECONDS (a restart may be
#                             under way meanwhile); prints the successes
import ctypes
import os
import signal
import socket
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


if __name__ == "__main__":
    if sys.argv[1] == "signals":
        signals()
    else:
        bind(float(sys.argv[2]))
