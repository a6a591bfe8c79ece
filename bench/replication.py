#!/usr/bin/env python3
"""Replication benchmark (the replicator's own speed): couchlite's replicator pushing couchlite -> couchlite.

Starts two couchlite servers (the source also runs the replicator, through `POST /_replicate`
with the source a local database and the target a URL), then times:

- push-small: 20,000 small documents (~250 bytes each), first push;
- push-photos: 400 documents with one 512 KiB photo each, first push;
- no-op re-push of each (everything already on the target);

and reports wall seconds, docs/s (MB/s for photos) and the source server's peak RSS growth.
CouchDB -> CouchDB figures for the same jobs need a real CouchDB 3.4.3 (see BENCHMARKS.md)
and are not measured here.

    python3 bench/replication.py --bin .build/release/couchlite
    python3 bench/replication.py --bin .build/debug/couchlite --smoke   # tiny sizes, checks it works
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import requests

ADMIN = ("bench", "bench")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary: str, root: str, name: str):
        self.port = free_port()
        self.url = f"http://{ADMIN[0]}:{ADMIN[1]}@127.0.0.1:{self.port}"
        data = os.path.join(root, name)
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--data-dir", data, "--admin", ":".join(ADMIN), "--log-level",
             "error"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_up", timeout=1)
                return
            except Exception:
                time.sleep(0.1)
        raise SystemExit(f"couchlite {name} did not start")

    def rss_kib(self, field: str = "VmHWM") -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)


def seed_small(s: requests.Session, url: str, count: int):
    for lo in range(0, count, 1000):
        docs = [{"_id": f"doc-{i:06d}", "type": "note", "text": "x" * 180, "n": i, "tags": ["a", "b"]}
                for i in range(lo, min(count, lo + 1000))]
        r = s.post(f"{url}/_bulk_docs", json={"docs": docs})
        assert r.status_code == 201, r.text


def seed_photos(s: requests.Session, url: str, count: int, size: int):
    rng = random.Random(7)
    for lo in range(0, count, 8):
        docs = []
        for i in range(lo, min(count, lo + 8)):
            data = rng.randbytes(size)
            docs.append({"_id": f"photo-{i:04d}", "type": "photo", "_attachments": {
                "photo.jpg": {"content_type": "image/jpeg", "data": base64.b64encode(data).decode()}}})
        r = s.post(f"{url}/_bulk_docs", json={"docs": docs})
        assert r.status_code == 201, r.text


BATCH = int(os.environ.get("BENCH_BATCH", "500"))


def replicate(s: requests.Session, source: Server, db: str, target: Server) -> tuple[float, dict]:
    started = time.monotonic()
    r = s.post(f"{source.url}/_replicate", json={"source": db, "target": f"{target.url}/{db}",
                                                 "create_target": True, "worker_batch_size": BATCH},
               timeout=3600)
    elapsed = time.monotonic() - started
    assert r.status_code == 200, r.text
    return elapsed, r.json()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=".build/release/couchlite")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    small, photos, photo_size = (20_000, 400, 512 * 1024) if not args.smoke else (500, 8, 64 * 1024)
    root = tempfile.mkdtemp(prefix="couchlite-bench-repl-")
    source = Server(args.bin, root, "source")
    target = Server(args.bin, root, "target")
    s = requests.Session()
    results = []
    try:
        for db, seed, count, mb in (("small", lambda u: seed_small(s, u, small), small, 0),
                                    ("photos", lambda u: seed_photos(s, u, photos, photo_size), photos,
                                     photos * photo_size / 1e6)):
            assert s.put(f"{source.url}/{db}").status_code == 201
            seed(f"{source.url}/{db}")
            before = source.rss_kib("VmRSS")
            wall, body = replicate(s, source, db, target)
            written = body["history"][0]["docs_written"]
            assert written == count, body["history"][0]
            peak = source.rss_kib("VmHWM")
            again, body2 = replicate(s, source, db, target)
            assert body2.get("no_changes") or body2["history"][0]["docs_written"] == 0, body2
            row = {"workload": f"push-{db}", "docs": count, "wall_s": round(wall, 3),
                   "docs_per_s": round(count / wall, 1), "noop_wall_s": round(again, 3),
                   "source_rss_growth_mib": round((peak - before) / 1024, 1)}
            if mb:
                row["mb_per_s"] = round(mb / wall, 1)
            results.append(row)
    finally:
        source.stop()
        target.stop()
        shutil.rmtree(root, ignore_errors=True)
    for row in results:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
