#!/usr/bin/env python3
"""Replication speed against a CouchDB cluster, side by side in one run (issue 28, item 4).

Three comparisons, each a pair of one-shot `POST /_replicate` jobs moving the same data, timed by wall clock,
run in alternating order round after round (A B, B A, A B, …) so that the load other work puts on the machine
falls on both sides alike; the figures are medians with the min–max spread:

- `push`: couchlite pushing its database into the cluster (`POST couchlite/_replicate`) vs the cluster's own
  replicator pulling the same database from couchlite (`POST cluster/_replicate`);
- `pull`: couchlite pulling a cluster database (`POST couchlite/_replicate`) vs the cluster replicating the same
  database into a new cluster database (`POST cluster/_replicate`);
- `headline`: a stock CouchDB's replicator (`--couch`, e.g. the single node) pushing its database into couchlite
  vs the same push into a second database of that CouchDB.

Each comparison runs for both data sets: 20,000 small documents (~250 bytes) and 400 documents with one
512 KiB photo each (random bytes). Every job must write every document; targets are fresh databases, deleted
after the round. The ratio is couchlite's side over the other side (< 1: couchlite's side is faster).

    python3 bench/cluster_speed.py --couchlite http://admin:pass@127.0.0.1:16984 \\
        --cluster http://admin:pass@127.0.0.1:15984 --couch http://admin:pass@127.0.0.1:5984 --rounds 3
    python3 bench/cluster_speed.py ... --only headline --sets small     # one comparison, one data set

With `--pid NAME=PID` (repeatable: the couchlite process, the CouchDB node's beam.smp) each job also reports the CPU
seconds (user + system, /proc/PID/stat) each of those processes spent during it: on a shared, loaded machine the
wall times swing with everyone else's work, the CPU a server spends on a job much less.

Databases are named `cluster-bench-…` on every server (the shared single node wants its users' prefix).
Not run in CI: it needs a running CouchDB.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import statistics
import sys
import time

import requests

PREFIX = "cluster-bench"
SMALL_DOCS = 20_000
PHOTOS = 400
PHOTO_BYTES = 512 * 1024
SEED_BATCH = 1000
PHOTO_SEED_BATCH = 8


def log(msg: str) -> None:
    print(time.strftime("%H:%M:%S"), msg, file=sys.stderr, flush=True)


def plain(url: str) -> str:
    return url.rstrip("/")


S = requests.Session()
S.headers["Content-Type"] = "application/json"


def recreate(url: str) -> None:
    S.delete(url, timeout=600)
    r = S.put(url, timeout=600)
    assert r.status_code in (201, 202), (url, r.status_code, r.text)


def seed(url: str, kind: str, small: int, photos: int, photo_bytes: int) -> int:
    """Fills a fresh database at `url` with one data set; returns its document count."""
    recreate(url)
    if kind == "small":
        for lo in range(0, small, SEED_BATCH):
            docs = [{"_id": f"doc-{i:06d}", "type": "note", "text": "x" * 180, "n": i, "tags": ["a", "b"]}
                    for i in range(lo, min(small, lo + SEED_BATCH))]
            r = S.post(f"{url}/_bulk_docs", data=json.dumps({"docs": docs}), timeout=600)
            assert r.status_code == 201, r.text[:300]
        return small
    rng = random.Random(7)
    for lo in range(0, photos, PHOTO_SEED_BATCH):
        docs = [{"_id": f"photo-{i:04d}", "type": "photo", "_attachments": {"photo.jpg": {
            "content_type": "image/jpeg", "data": base64.b64encode(rng.randbytes(photo_bytes)).decode()}}}
            for i in range(lo, min(photos, lo + PHOTO_SEED_BATCH))]
        r = S.post(f"{url}/_bulk_docs", data=json.dumps({"docs": docs}), timeout=600)
        assert r.status_code == 201, r.text[:300]
    return photos


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def replicate(runner: str, source: str, target: str, count: int) -> float:
    """One one-shot job on `runner`; returns its wall seconds after checking it wrote `count` documents."""
    body = {"source": source, "target": target, "create_target": True}
    started = time.monotonic()
    r = S.post(f"{runner}/_replicate", data=json.dumps(body), timeout=7200)
    elapsed = time.monotonic() - started
    assert r.status_code == 200 and r.json().get("ok"), (runner, body, r.status_code, r.text[:500])
    history = r.json().get("history") or [{}]
    written = history[0].get("docs_written")
    assert written == count, (runner, body, history[0])
    return elapsed


def comparisons(args) -> dict:
    """name -> (the server the source database is seeded on, [(side label, runner, target server)])"""
    cl, cluster, couch = args.couchlite, args.cluster, args.couch
    table = {
        "push": (cl, [("couchlite pushes", cl, cluster), ("cluster pulls", cluster, cluster)]),
        "pull": (cluster, [("couchlite pulls", cl, cl), ("cluster to cluster", cluster, cluster)]),
    }
    if couch:
        table["headline"] = (couch, [("CouchDB into couchlite", couch, cl),
                                     ("CouchDB into CouchDB", couch, couch)])
    return {k: v for k, v in table.items() if k in args.only}


def run(args) -> list[dict]:
    rows = []
    for name, (source_server, sides) in comparisons(args).items():
        for kind in args.sets:
            source_db = f"{PREFIX}-src-{name}-{kind}"
            source = f"{source_server}/{source_db}"
            count = seed(source, kind, args.small, args.photos, args.photo_bytes)
            log(f"{name}/{kind}: seeded {count} docs at {plain(source_server)}")
            times: dict[str, list[float]] = {label: [] for label, *_ in sides}
            cpu: dict[str, dict[str, list[float]]] = {label: {n: [] for n in args.pids} for label, *_ in sides}
            for round_no in range(args.rounds):
                order = sides if round_no % 2 == 0 else list(reversed(sides))
                for label, runner, target_server in order:
                    target = f"{target_server}/{PREFIX}-tgt-{name}-{kind}-{round_no}"
                    S.delete(target, timeout=600)
                    # A local name where the runner is couchlite and the database is its own; URLs elsewhere.
                    src = source_db if runner == source_server == args.couchlite else source
                    tgt = target.rsplit("/", 1)[1] if runner == target_server == args.couchlite else target
                    before = {n: cpu_seconds(pid) for n, pid in args.pids.items()}
                    seconds = replicate(runner, src, tgt, count)
                    spent = {n: cpu_seconds(pid) - before[n] for n, pid in args.pids.items()}
                    times[label].append(seconds)
                    for n, value in spent.items():
                        cpu[label][n].append(value)
                    log(f"{name}/{kind} round {round_no + 1}: {label}: {seconds:.2f} s"
                        + "".join(f", {n} CPU {v:.2f} s" for n, v in spent.items()))
                    S.delete(target, timeout=600)
            (a_label, *_), (b_label, *_) = sides
            a, b = times[a_label], times[b_label]
            row = {"comparison": name, "set": kind, "docs": count, "a": a_label, "b": b_label,
                   "a_s": [round(x, 2) for x in a], "b_s": [round(x, 2) for x in b],
                   "a_median_s": round(statistics.median(a), 2), "b_median_s": round(statistics.median(b), 2),
                   "ratio_of_medians": round(statistics.median(a) / statistics.median(b), 2),
                   "round_ratios": [round(x / y, 2) for x, y in zip(a, b)],
                   "cpu_s": {label: {n: [round(v, 2) for v in values] for n, values in per.items()}
                             for label, per in cpu.items()}}
            rows.append(row)
            print(json.dumps(row), flush=True)
            S.delete(source, timeout=600)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--couchlite", required=True, help="couchlite URL with admin credentials")
    parser.add_argument("--cluster", required=True, help="one cluster node's URL with admin credentials")
    parser.add_argument("--couch", help="a CouchDB for the headline comparison (its source and second target)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="headline,push,pull")
    parser.add_argument("--sets", default="small,photos")
    parser.add_argument("--small", type=int, default=SMALL_DOCS)
    parser.add_argument("--photos", type=int, default=PHOTOS)
    parser.add_argument("--photo-bytes", type=int, default=PHOTO_BYTES)
    parser.add_argument("--pid", action="append", default=[], help="NAME=PID of a server whose CPU time to report")
    args = parser.parse_args()
    args.couchlite, args.cluster = plain(args.couchlite), plain(args.cluster)
    args.couch = plain(args.couch) if args.couch else None
    args.only = args.only.split(",")
    args.sets = args.sets.split(",")
    args.pids = {n: int(p) for n, p in (x.split("=", 1) for x in args.pid)}
    rows = run(args)
    print("| comparison | set | A | B | A median (s) | B median (s) | A/B | rounds A/B | median CPU s, A; B |")
    print("|---|---|---|---|---:|---:|---:|---|---|")
    for r in rows:
        cpu = "; ".join(", ".join(f"{n} {statistics.median(v):.2f}" for n, v in per.items() if v)
                        for per in r["cpu_s"].values())
        print(f"| {r['comparison']} | {r['set']} | {r['a']} | {r['b']} | {r['a_median_s']} | {r['b_median_s']} | "
              f"{r['ratio_of_medians']} | {', '.join(map(str, r['round_ratios']))} | {cpu} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
