#!/usr/bin/env python3
"""Draws docs/bench-scaling.png from docs/bench-scaling.json (figures of `dbeacon bench` at
several city sizes, entered from the runs docs/benchmarks-history.md records).

    python3 -m venv /tmp/plot && /tmp/plot/bin/pip install matplotlib
    /tmp/plot/bin/python scripts/bench-plot.py
"""
import json
import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

root = pathlib.Path(__file__).resolve().parent.parent
runs = json.loads((root / "docs" / "bench-scaling.json").read_text())["runs"]
runs.sort(key=lambda r: r["beacons"])
n = [r["beacons"] for r in runs]
labels = [f"{b // 1000}k" if b < 1_000_000 else f"{b / 1e6:g}M" for b in n]

panels = [
    ("start-up (s)", [("from the snapshot", "startup_sec"), ("from the database", "startup_from_database_sec")], "log"),
    ("memory and disk (GiB)", [("server resident", "rss_gib"), ("database file", "db_gib"), ("index folder", "index_gib")], "log"),
    ("in-process lookups / s", [("1 thread", "lookups_per_sec"), ("2 threads", "lookups_per_sec_2t")], "log"),
    ("durable location fixes / s", [("with events", "fixes_per_sec")], "linear"),
    ("HTTP nearby req / s", [("full Features", "http_requests_per_sec"), ("perimeter=none", "http_no_perimeter_requests_per_sec")], "log"),
    ("HTTP nearby p99 (ms)", [("full Features", "http_p99_ms"), ("perimeter=none", "http_no_perimeter_p99_ms")], "linear"),
]

fig, axes = plt.subplots(2, 3, figsize=(13, 7.5))
for ax, (title, series, scale) in zip(axes.flat, panels):
    for name, key in series:
        ys = [r.get(key) for r in runs]
        xs = [x for x, y in zip(n, ys) if y is not None]
        ys = [y for y in ys if y is not None]
        ax.plot(xs, ys, marker="o", label=name)
        for x, y in zip(xs, ys):
            ax.annotate(f"{y:,.3g}" if y < 100 else f"{y:,.0f}", (x, y), textcoords="offset points", xytext=(0, 6),
                        ha="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale(scale)
    ax.set_xticks(n, labels)
    ax.minorticks_off()
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
fig.suptitle("dbeacon bench: 100k → 1M → 2M beacons (2 vCPU, 24 GiB; 1M the median of three runs, see docs/benchmarks-history.md)", fontsize=11)
fig.tight_layout()
out = root / "docs" / "bench-scaling.png"
fig.savefig(out, dpi=110)
print(out)
