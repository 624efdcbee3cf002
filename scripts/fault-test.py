#!/usr/bin/env python3
"""Fault suite for the PostgreSQL scale-out path (issue 27), on loopback only.

Two `dbeacon serve` nodes share a throwaway PostgreSQL 15 + PostGIS cluster (fsync on). While
writers alternate between the nodes (beacons created, location fixes in and out of a fence),
PostgreSQL is stopped, crashed (`-m immediate`) and restarted, and a node is killed (SIGKILL)
and restarted, for a bounded number of rounds. It asserts:

* every request is answered within the database deadline plus a margin (no hang), and a
  request that could not reach the database is 503 `database_unavailable` with `Retry-After`;
* no acknowledged write is lost (every 201 id is in the database), no fence event is
  duplicated (each user's entries and exits strictly alternate);
* `/readyz` is 503 while the database is down and 200 again after; writes succeed on every
  node soon after PostgreSQL accepts connections (recovery time, measured);
* after each fault both nodes' `/v1/nearby` agree with the database within a few seconds;
* SIGTERM ends each node within its grace period.

Usage: scripts/fault-test.py [--rounds N] [--bin .build/debug/dbeacon]
Prints the figures and a closing line `N passed, M failed`; exits non-zero on any failure.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

PG_BIN = "/usr/lib/postgresql/15/bin"
ADMIN = "fault-admin-token"
DEADLINE = 3.0          # --db-timeout given to the nodes
MARGIN = 4.0            # answered within DEADLINE + MARGIN, or it counts as hung
LAT, LON = 48.7784, 9.18


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Cluster:
    """A throwaway PostgreSQL cluster in a temporary folder, run as `postgres` when root."""

    def __init__(self, root):
        self.dir = os.path.join(root, "pg")
        os.makedirs(self.dir)
        self.port = free_port()
        self.as_user = []
        if os.geteuid() == 0:
            if subprocess.run(["id", "postgres"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
                subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"], check=True)
            shutil.chown(self.dir, "postgres")
            os.chmod(root, 0o755)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.run("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8")

    @property
    def data(self):
        return os.path.join(self.dir, "data")

    def run(self, tool, *args, check=True):
        return subprocess.run(self.as_user + [os.path.join(PG_BIN, tool), *args], check=check,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self):
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c max_connections=200 -c fsync=on"
        self.run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "server.log"), "-w", "-t", "60", "start", "-o", opts)

    def stop(self, mode):
        self.run("pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop", check=False)

    def psql(self, sql, db="faults"):
        out = subprocess.run(self.as_user + [os.path.join(PG_BIN, "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                                             "-d", db, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql],
                             check=True, capture_output=True, text=True)
        return out.stdout.strip()

    @property
    def url(self):
        return f"postgres://postgres@127.0.0.1:{self.port}/faults"


class Node:
    def __init__(self, binary, url, root, name):
        self.binary, self.url, self.name = binary, url, name
        self.port = free_port()
        self.log = open(os.path.join(root, f"{name}.log"), "ab")
        self.proc = None

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen([self.binary, "serve", "--db", self.url, "--port", str(self.port), "--admin-token", ADMIN,
                                      "--db-timeout", str(DEADLINE), "--write-rate", "0", "--location-rate", "0",
                                      "--fixes-per-minute", "0", "--log-level", "warning", "--no-console"],
                                     stdout=self.log, stderr=self.log)
        until(lambda: call(self, "GET", "/healthz", timeout=1)[0] == 200, 60, f"{self.name} did not start")

    def kill(self, sig):
        self.proc.send_signal(sig)

    def wait_exit(self, seconds):
        try:
            self.proc.wait(seconds)
            return True
        except subprocess.TimeoutExpired:
            return False


def call(node, method, path, body=None, token=ADMIN, timeout=DEADLINE + MARGIN):
    """(status, json or None, headers, seconds); status 0 when no answer came in time."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(node.base + path, data=data, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    start = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, (json.loads(raw) if raw else None), dict(r.headers), time.monotonic() - start
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return e.code, parsed, dict(e.headers), time.monotonic() - start
    except (urllib.error.URLError, ConnectionError, TimeoutError, socket.timeout) as e:
        elapsed = time.monotonic() - start
        # A refused connection (a node being restarted) answers at once; only a timeout is a hang.
        hung = isinstance(e, (TimeoutError, socket.timeout)) or "timed out" in str(e)
        return (0 if hung else -1), None, {}, elapsed


def until(predicate, seconds, message):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return time.monotonic()
        time.sleep(0.1)
    raise AssertionError(message)


class Load:
    """Writers alternating between the nodes; everything they are told is recorded."""

    def __init__(self, nodes, users):
        self.nodes, self.users = nodes, users
        self.lock = threading.Lock()
        self.created = set()           # beacon ids answered 201
        self.deleted = set()           # beacon ids whose DELETE answered 204
        self.maybe_deleted = set()     # beacon ids whose DELETE got no definite answer
        self.hung = []                 # (node, path, seconds)
        self.bad_503 = []              # 503s without Retry-After or the documented code
        self.conflicts = []            # a few 409s, for the figures
        self.statuses = {}
        self.worst = 0.0
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self.writer, args=(i,), daemon=True) for i in range(4)]
        self.fixers = [threading.Thread(target=self.fixer, args=(u,), daemon=True) for u in users]

    def start(self):
        for t in self.threads + self.fixers:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads + self.fixers:
            t.join(30)

    def note(self, node, path, result):
        status, body, headers, seconds = result
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if status > 0:
                self.worst = max(self.worst, seconds)
            if status == 0:
                self.hung.append((node.name, path, round(seconds, 2)))
            if status == 409 and len(self.conflicts) < 5:
                self.conflicts.append((node.name, path, (body or {}).get("error", {}).get("code"), (body or {}).get("error", {}).get("message", "")[:160]))
            if status == 503:
                code = (body or {}).get("error", {}).get("code")
                if "Retry-After" not in headers or code not in ("database_unavailable", "database_busy"):
                    self.bad_503.append((node.name, path, code, headers.get("Retry-After")))

    def writer(self, i):
        """Creates beacons at the point and deletes each one after the next, alternating nodes: the
        index of each node must follow the other's creates and deletes."""
        n, previous = 0, None
        while not self.stop.is_set():
            node = self.nodes[n % 2]
            bid = f"bcn_{self.users[0][0][4:]}_w{i}n{n}"
            body = {"type": "Feature", "id": bid, "geometry": {"type": "Point", "coordinates": [LON, LAT]},
                    "properties": {"name": f"w{i}n{n}", "perimeter": {"type": "Circle", "radius_m": 30}}}
            result = call(node, "POST", "/v1/beacons", body, token=self.users[0][1])
            self.note(node, "POST /v1/beacons", result)
            if result[0] == 201:
                with self.lock:
                    self.created.add(bid)
            if previous:
                other = self.nodes[(n + 1) % 2]
                result = call(other, "DELETE", f"/v1/beacons/{previous}", token=self.users[0][1])
                self.note(other, "DELETE /v1/beacons/{id}", result)
                if result[0] == 204:
                    with self.lock:
                        self.deleted.add(previous)
                elif result[0] not in (404,):
                    # 503 past the deadline (or no answer): the delete may have committed.
                    with self.lock:
                        self.maybe_deleted.add(previous)
            previous = bid
            n += 1
            time.sleep(0.05)

    def fixer(self, user):
        n = 0
        while not self.stop.is_set():
            node = self.nodes[n % 2]
            inside = n % 2 == 0
            lat = LAT if inside else LAT + 0.01
            result = call(node, "POST", "/v1/me/location", {"lat": lat, "lon": LON, "accuracy_m": 5}, token=user[1])
            self.note(node, "POST /v1/me/location", result)
            n += 1
            time.sleep(0.05)


class Suite:
    def __init__(self):
        self.passed = 0
        self.failed = []
        self.figures = {}

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed.append(what)
            print(f"FAIL: {what}", flush=True)


def agree_with_database(cluster, nodes):
    """Both nodes' nearby at the point (as the operator) equal the beacons the database has there."""
    want = set(filter(None, cluster.psql("SELECT id FROM beacons WHERE name <> 'probe'").split("\n")))
    seen = []
    for node in nodes:
        status, body, _, _ = call(node, "GET", f"/v1/nearby?lat={LAT}&lon={LON}&limit=500&perimeter=none")
        if status != 200:
            return False
        seen.append({f["id"] for f in body["features"]})
    return all(s == want for s in seen) if len(want) < 500 else all(len(s) == 500 for s in seen)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=int(os.environ.get("FAULT_ROUNDS", "3")))
    parser.add_argument("--bin", default=os.environ.get("DBEACON_BIN", ".build/debug/dbeacon"))
    args = parser.parse_args()
    # Under /tmp itself: the run's TMPDIR (scripts/test.sh) is private to root, and PostgreSQL runs
    # as `postgres`, which must reach its folder.
    root = tempfile.mkdtemp(prefix="dbeacon-faults.", dir="/tmp")
    suite = Suite()
    cluster = Cluster(root)
    nodes = []
    try:
        cluster.start()
        cluster.psql("CREATE DATABASE faults", db="postgres")
        cluster.psql("CREATE EXTENSION postgis")
        nodes = [Node(args.bin, cluster.url, root, "node-a"), Node(args.bin, cluster.url, root, "node-b")]
        nodes[0].start()
        nodes[1].start()
        users = []
        for name in ("writer", "walker1", "walker2"):
            status, body, _, _ = call(nodes[0], "POST", "/v1/users", {"name": name})
            assert status == 201, (status, body)
            users.append((body["id"], body["token"]))
        # The fence the walkers cross.
        status, _, _, _ = call(nodes[0], "POST", "/v1/beacons", {"type": "Feature", "geometry": {"type": "Point", "coordinates": [LON, LAT]},
                               "properties": {"name": "fence", "perimeter": {"type": "Circle", "radius_m": 100}}}, token=users[0][1])
        assert status == 201
        load = Load(nodes, [users[0], users[1], users[2]])
        load.start()
        time.sleep(2)
        recoveries, ready_again, converge = [], [], []
        faults = []
        for r in range(args.rounds):
            faults += [("stop", r), ("crash", r), ("kill-node", r)]
        for kind, r in faults:
            label = f"round {r + 1}, {kind}"
            if kind in ("stop", "crash"):
                cluster.stop("fast" if kind == "stop" else "immediate")
                time.sleep(0.5)
                # While it is down: readiness fails fast, writes are 503 with Retry-After (checked in the load).
                for node in nodes:
                    status, _, headers, seconds = call(node, "GET", "/readyz")
                    suite.check(status == 503 and "Retry-After" in headers and seconds < DEADLINE + MARGIN,
                                f"{label}: {node.name} /readyz while down answered {status} in {seconds:.1f} s")
                time.sleep(2.5)
                cluster.start()
                accepted = time.monotonic()
                # Recovery: a write succeeds on every node.
                for node in nodes:
                    def writes():
                        body = {"type": "Feature", "geometry": {"type": "Point", "coordinates": [LON + 1, LAT]}, "properties": {"name": "probe"}}
                        return call(node, "POST", "/v1/beacons", body, token=users[0][1], timeout=DEADLINE + MARGIN)[0] == 201
                    try:
                        done = until(writes, 30, f"{label}: {node.name} accepts no writes 30 s after PostgreSQL is back")
                        recoveries.append(done - accepted)
                    except AssertionError as e:
                        suite.check(False, str(e))
                for node in nodes:
                    try:
                        done = until(lambda: call(node, "GET", "/readyz")[0] == 200, 30, f"{label}: {node.name} not ready 30 s after")
                        ready_again.append(done - accepted)
                    except AssertionError as e:
                        suite.check(False, str(e))
            else:
                nodes[1].kill(signal.SIGKILL)
                nodes[1].proc.wait(10)
                time.sleep(1)
                nodes[1].start()
                accepted = time.monotonic()
            try:
                done = until(lambda: agree_with_database(cluster, nodes), 20, f"{label}: the nodes' nearby disagree with the database")
                converge.append(done - accepted)
                suite.check(True, label)
            except AssertionError as e:
                suite.check(False, str(e))
        load.finish()
        time.sleep(1)
        # Nothing acknowledged is lost: every 201 is there unless its delete was answered 204,
        # and no 204 left its beacon behind.
        stored = set(filter(None, cluster.psql("SELECT id FROM beacons").split("\n")))
        lost = (load.created - load.deleted - load.maybe_deleted) - stored
        suite.check(not lost, f"{len(lost)} acknowledged beacons lost: {sorted(lost)[:5]}")
        back = load.deleted & stored
        suite.check(not back, f"{len(back)} beacons whose delete was acknowledged are still there: {sorted(back)[:5]}")
        # No duplicated fence events: each walker's entries and exits of the fence alternate.
        for uid, _ in users[1:]:
            kinds = cluster.psql(f"SELECT type FROM events WHERE recipient = '{uid}' AND type IN ('beacon.entered','beacon.exited') "
                                 "AND data LIKE '%\"name\":\"fence\"%' ORDER BY seq").split("\n")
            kinds = [k for k in kinds if k]
            twice = sum(1 for a, b in zip(kinds, kinds[1:]) if a == b)
            suite.check(twice == 0 and len(kinds) > 2, f"walker {uid}: {twice} repeated fence events in {len(kinds)}")
        suite.check(not load.hung, f"{len(load.hung)} requests unanswered past {DEADLINE + MARGIN} s: {load.hung[:5]}")
        suite.check(not load.bad_503, f"503s without Retry-After or the documented code: {load.bad_503[:5]}")
        suite.check(not load.conflicts, f"unexpected 409s (a fix racing a delete must not fail): {load.conflicts}")
        suite.check(not any(500 <= k < 600 and k not in (503,) for k in load.statuses), f"5xx other than 503: {load.statuses}")
        suite.check(agree_with_database(cluster, nodes), "the nodes' nearby agree with the database at the end")
        # SIGTERM completes within the grace period, whatever the database does: node-b is
        # stopped while PostgreSQL is up, node-a while it is down (crashed) under a request.
        nodes[1].kill(signal.SIGTERM)
        suite.check(nodes[1].wait_exit(30), f"{nodes[1].name} still running 30 s after SIGTERM")
        cluster.stop("immediate")
        pending = threading.Thread(target=call, args=(nodes[0], "POST", "/v1/me/location",
                                                      {"lat": LAT, "lon": LON, "accuracy_m": 5}, users[1][1]), daemon=True)
        pending.start()
        time.sleep(0.3)
        stopping = time.monotonic()
        nodes[0].kill(signal.SIGTERM)
        suite.check(nodes[0].wait_exit(30), f"{nodes[0].name} still running 30 s after SIGTERM with PostgreSQL down")
        suite.figures["SIGTERM to exit with PostgreSQL down (s)"] = round(time.monotonic() - stopping, 2)
        suite.figures = {**suite.figures,
            "faults": len(faults), "acknowledged creates": len(load.created), "acknowledged deletes": len(load.deleted), "answers by status": load.statuses,
            "worst answered request (s)": round(load.worst, 2), "409 samples": load.conflicts,
            "writes succeed on every node after PostgreSQL is back (s, max)": round(max(recoveries), 2) if recoveries else None,
            "ready again (s, max)": round(max(ready_again), 2) if ready_again else None,
            "nodes agree with the database after a fault (s, max)": round(max(converge), 2) if converge else None,
        }
    finally:
        for node in nodes:
            if node.proc and node.proc.poll() is None:
                node.kill(signal.SIGKILL)
        cluster.stop("immediate")
        if suite.failed:
            for node in nodes:
                node.log.flush()
                with open(node.log.name, "rb") as f:
                    text = f.read().decode(errors="replace")
                crash = text.find("Fatal error")
                crash = crash if crash >= 0 else text.find("Crash")
                print(f"--- {node.name} log ({'from the crash' if crash >= 0 else 'last lines'}, all of it in {node.log.name})")
                print(text[crash:crash + 6000] if crash >= 0 else text[-3000:])
        else:
            shutil.rmtree(root, ignore_errors=True)
    for k, v in suite.figures.items():
        print(f"fault-test: {k}: {v}")
    print(f"{suite.passed} passed, {len(suite.failed)} failed")
    return 1 if suite.failed else 0


if __name__ == "__main__":
    sys.exit(main())
