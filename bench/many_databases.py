#!/usr/bin/env python3
"""Many databases (memory must stay bounded however many there are): the server's memory with thousands of
databases, each touched once.

Starts couchlite with `--max-dbs-open N`, creates D databases and writes one document into each
(from C concurrent clients), then reads every document back, and reports wall time, the server's
VmRSS at the end, its peak (VmHWM), its thread count and how many database files it holds open
(distinct `*.couch` in /proc/PID/fd).

    python3 bench/many_databases.py --bin .build/debug/couchlite                       # 10,000, bound 500
    python3 bench/many_databases.py --bin .build/debug/couchlite --databases 2000 --max-dbs-open 100000
    python3 bench/many_databases.py --bin .build/debug/couchlite --smoke               # 60 databases, bound 10
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request

import requests

ADMIN = ("bench", "bench")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def open_database_files(pid: int) -> int:
    names = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.endswith(".couch"):
            names.add(target)
    return len(names)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--databases", type=int, default=10_000)
    parser.add_argument("--max-dbs-open", type=int, default=500)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.databases, args.max_dbs_open = 60, 10

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(65536, hard), hard))
    root = tempfile.mkdtemp(prefix="couchlite-many-")
    port = free_port()
    proc = subprocess.Popen(
        [args.bin, "--port", str(port), "--data-dir", os.path.join(root, "data"), "--admin", ":".join(ADMIN),
         "--log-level", "error", "--max-dbs-open", str(args.max_dbs_open), "--pbkdf2-iterations", "1000"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_up", timeout=1)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise SystemExit("couchlite did not start")
                time.sleep(0.1)
        base = f"http://127.0.0.1:{port}"
        start_rss = int(status(proc.pid)["VmRSS"].split()[0])
        failures: list[str] = []
        next_index = iter(range(args.databases))
        lock = threading.Lock()

        def client(phase: str) -> None:
            with requests.Session() as s:
                s.auth = ADMIN
                while True:
                    with lock:
                        index = next(next_index, None)
                    if index is None:
                        return
                    name = f"db-{index:05d}"
                    if phase == "write":
                        ok = s.put(f"{base}/{name}", timeout=60).status_code == 201
                        ok = ok and s.put(f"{base}/{name}/doc", json={"i": index}, timeout=60).status_code == 201
                    else:
                        r = s.get(f"{base}/{name}/doc", timeout=60)
                        ok = r.status_code == 200 and r.json()["i"] == index
                    if not ok:
                        failures.append(f"{phase} {name}")

        timings = {}
        for phase in ("write", "read"):
            next_index = iter(range(args.databases))
            started = time.monotonic()
            threads = [threading.Thread(target=client, args=(phase,)) for _ in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            timings[phase] = round(time.monotonic() - started, 1)
        st = status(proc.pid)
        result = {
            "databases": args.databases, "max_dbs_open": args.max_dbs_open, "failures": len(failures),
            "write_s": timings["write"], "read_s": timings["read"],
            "rss_start_mib": round(start_rss / 1024, 1), "rss_end_mib": round(int(st["VmRSS"].split()[0]) / 1024, 1),
            "rss_peak_mib": round(int(st["VmHWM"].split()[0]) / 1024, 1), "threads": int(st["Threads"]),
            "open_database_files": open_database_files(proc.pid),
        }
        print(json.dumps(result))
        if failures:
            raise SystemExit(f"{len(failures)} failures, first: {failures[:5]}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
