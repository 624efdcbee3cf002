#!/usr/bin/env python3
"""Runs the README's tour as written and checks it: executable documentation.

Every ```sh block of README.md preceded by the line `<!-- tour -->` is split into commands
(a command continues over lines while a quote is open or a line ends with a backslash) and run
in order in one bash session, against a fresh `dbeacon serve` with the sample data on a free
loopback port, with `dbeacon` on the PATH and a webhook receiver (scripts/webhook-receiver.py)
listening. The only rewrites are addresses and paths: 127.0.0.1:8080 (the server), 127.0.0.1:9999
(the receiver), data/dbeacon.sqlite (the server's database) and .build/release (the binary under
test). The check fails when a command exits non-zero, or when the shape of an answer (JSON keys
and value types; for text, its header line) differs from Tests/readme-tour.shapes.json.

  scripts/readme-tour.py            # check (part of ./scripts/test.sh)
  scripts/readme-tour.py --update   # after changing the tour on purpose: record the new shapes
  DBEACON_BIN=.build/release/dbeacon scripts/readme-tour.py
"""
import argparse
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = os.path.join(ROOT, "Tests", "readme-tour.shapes.json")

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--update", action="store_true", help="record the shapes instead of checking them")
parser.add_argument("--verbose", action="store_true", help="print every command and its output")
args = parser.parse_args()


def tour_commands(readme):
    """The commands of the tour blocks, in order."""
    commands, lines, take, block = [], readme.split("\n"), False, None
    for line in lines:
        if line.strip() == "<!-- tour -->":
            take = True
            continue
        if block is None and line.startswith("```"):
            block = [] if take else None
            if block is None:
                block = "skip"
            continue
        if block is not None and line.startswith("```"):
            if block != "skip":
                commands += split_commands(block)
            block, take = None, False
            continue
        if block is not None and block != "skip":
            block.append(line)
    return commands


def split_commands(block):
    out, current = [], []
    for line in block:
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current.append(line)
        text = "\n".join(current)
        if text.endswith("\\"):
            continue
        try:
            shlex.split(text, comments=True)
        except ValueError:  # an open quote: the command goes on
            continue
        out.append(text)
        current = []
    if current:
        raise SystemExit("README tour: unfinished command: " + "\n".join(current))
    return out


def shape(output):
    """JSON: keys and types (arrays by their first item; empty arrays match any); text: its first line."""
    text = output.strip()
    try:
        return json_shape(json.loads(text))
    except ValueError:
        pass
    first = text.split("\n", 1)[0] if text else ""
    # A table header is stable; other text (ids, distances, times) is not.
    if first and first == first.upper() and re.search("[A-Z]{3}", first):
        return "text: " + " ".join(first.split())  # column widths follow the data; the columns do not
    return "text"


def json_shape(v):
    if isinstance(v, dict):
        return {k: json_shape(x) for k, x in sorted(v.items())}
    if isinstance(v, list):
        return [json_shape(v[0])] if v else []
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if v is None:
        return "null"
    return "string"


def same_shape(expected, got):
    if isinstance(expected, list) and isinstance(got, list):
        return not expected or not got or same_shape(expected[0], got[0])
    if isinstance(expected, dict) and isinstance(got, dict):
        return expected.keys() == got.keys() and all(same_shape(expected[k], got[k]) for k in expected)
    # A value that may be null is compared by what it is when present (e.g. next_cursor).
    return expected == got or "null" in (expected, got)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    binary = os.path.abspath(os.environ.get("DBEACON_BIN", os.path.join(ROOT, ".build", "debug", "dbeacon")))
    if not os.access(binary, os.X_OK):
        sys.exit(f"readme-tour.py: {binary} is not built (swift build first)")
    work = tempfile.mkdtemp(prefix="dbeacon-tour-")
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir)
    os.symlink(binary, os.path.join(bindir, "dbeacon"))
    port, hook_port = free_port(), free_port()
    db = os.path.join(work, "data", "dbeacon.sqlite")
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], DBEACON_ADMIN_TOKEN="dev-admin-token")
    for key in ("DBEACON_SERVER", "DBEACON_TOKEN", "DBEACON_DB"):
        env.pop(key, None)
    # The server as ./scripts/run.sh starts it.
    run_sh = open(os.path.join(ROOT, "scripts", "run.sh")).read()
    serve_args = re.search(r"dbeacon serve (.*)", run_sh).group(1).replace('"$@"', "").split()
    server = subprocess.Popen([binary, "serve", "--db", db, "--port", str(port), "--log-level", "warning"] + serve_args,
                              cwd=ROOT, env=env, stdout=open(os.path.join(work, "serve.log"), "w"), stderr=subprocess.STDOUT)
    receiver = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts", "webhook-receiver.py"), "--port", str(hook_port),
                                 "--log", os.path.join(work, "hooks.jsonl")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except OSError:
                if server.poll() is not None:
                    sys.exit("readme-tour.py: the server did not start:\n" + open(os.path.join(work, "serve.log")).read())
                time.sleep(0.1)
        commands = tour_commands(open(os.path.join(ROOT, "README.md"), encoding="utf-8").read())
        return check(commands, work, env, port, hook_port, db, bindir)
    finally:
        for p in (server, receiver):
            p.terminate()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


def check(commands, work, env, port, hook_port, db, bindir):
    out = os.path.join(work, "out")
    os.makedirs(out)
    script = ["set -uo pipefail", f"cd {shlex.quote(ROOT)}"]
    for i, command in enumerate(commands):
        command = (command.replace("127.0.0.1:8080", f"127.0.0.1:{port}").replace("127.0.0.1:9999", f"127.0.0.1:{hook_port}")
                   .replace("$PWD/.build/release", bindir).replace(".build/release/", ""))
        command = re.sub(r"(\./)?data/dbeacon\.sqlite", db, command)
        script.append(f"{{ {command}\n}} > {out}/{i}.out 2> {out}/{i}.err; echo $? > {out}/{i}.rc")
    with open(os.path.join(work, "tour.sh"), "w") as f:
        f.write("\n".join(script) + "\n")
    subprocess.run(["bash", os.path.join(work, "tour.sh")], env=env, timeout=600)
    results = []
    for i, command in enumerate(commands):
        rc_file = os.path.join(out, f"{i}.rc")
        rc = int(open(rc_file).read()) if os.path.exists(rc_file) else -1
        output = open(os.path.join(out, f"{i}.out"), encoding="utf-8", errors="replace").read() if rc >= 0 else ""
        err = open(os.path.join(out, f"{i}.err"), encoding="utf-8", errors="replace").read() if rc >= 0 else ""
        results.append({"command": command, "rc": rc, "shape": shape(output), "output": output, "err": err})
        if args.verbose:
            print(f"$ {command}\n{output}{err}(exit {rc})\n")
    failed = [r for r in results if r["rc"] != 0]
    for r in failed:
        print(f"FAILED (exit {r['rc']}): {r['command']}\n{r['output']}{r['err']}", file=sys.stderr)
    if args.update:
        if failed:
            return 1
        with open(SHAPES, "w") as f:
            json.dump([{"command": r["command"], "shape": r["shape"]} for r in results], f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"recorded the shapes of {len(results)} commands in {os.path.relpath(SHAPES, ROOT)}")
        return 0
    expected = json.load(open(SHAPES)) if os.path.exists(SHAPES) else []
    changed = []
    if [e["command"] for e in expected] != [r["command"] for r in results]:
        changed.append("the tour's commands changed; run scripts/readme-tour.py --update after checking them")
    else:
        for e, r in zip(expected, results):
            if r["rc"] == 0 and not same_shape(e["shape"], r["shape"]):
                changed.append(f"the answer of `{r['command'][:120]}` changed shape:\n  expected {json.dumps(e['shape'])[:600]}\n"
                               f"  got      {json.dumps(r['shape'])[:600]}")
    # The tour registers a webhook to the receiver and walks into the Markthalle: it must arrive.
    hooks = os.path.join(work, "hooks.jsonl")
    for _ in range(100):
        if os.path.exists(hooks) and "beacon.entered" in open(hooks).read():
            break
        time.sleep(0.1)
    else:
        changed.append("the webhook receiver got no beacon.entered delivery")
    for c in changed:
        print("CHANGED: " + c, file=sys.stderr)
    print(f"README tour: {len(results)} commands, {len(failed)} failed, {len(changed)} changed")
    return 1 if failed or changed else 0


if __name__ == "__main__":
    sys.exit(main())
