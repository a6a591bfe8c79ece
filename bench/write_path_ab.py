#!/usr/bin/env python3
"""The document write path, binary A against binary B (a change that touches every write, such as the
`_db_updates` log each commit records into): sequential single-document PUTs and `_bulk_docs` batches of 100 over
four databases, in alternating rounds on a fresh data dir each; medians of docs/s and of the server's CPU ms per
1,000 documents, and their ratios B/A.

    python3 bench/write_path_ab.py --before /tmp/couchlite-main --after .build/debug/couchlite --rounds 4
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

import requests

DATABASES = "abcd"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ms(pid: int) -> float:
    """User + system CPU of the process so far, in ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def one_round(binary: str, singles: int, batches: int) -> dict[str, float]:
    data_dir = tempfile.mkdtemp(prefix="write-path-ab-")
    port = free_port()
    server = subprocess.Popen(
        [binary, "--bind", "127.0.0.1", "--port", str(port), "--data-dir", data_dir, "--admin", "admin:pass",
         "--pbkdf2-iterations", "1000", "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://admin:pass@127.0.0.1:{port}"
    session = requests.Session()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if session.get(f"{url}/_up", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, f"{binary} did not start"
            time.sleep(0.1)
        for db in DATABASES:
            assert session.put(f"{url}/{db}").status_code == 201
        figures = {}
        cpu, started = cpu_ms(server.pid), time.monotonic()
        for i in range(singles):
            assert session.put(f"{url}/{DATABASES[i % 4]}/s{i}", json={"i": i}).status_code == 201
        figures["single PUT docs/s"] = singles / (time.monotonic() - started)
        figures["single PUT cpu ms/1000 docs"] = (cpu_ms(server.pid) - cpu) * 1000 / singles
        cpu, started = cpu_ms(server.pid), time.monotonic()
        for b in range(batches):
            docs = [{"_id": f"b{b}-{k}", "k": k} for k in range(100)]
            assert session.post(f"{url}/{DATABASES[b % 4]}/_bulk_docs", json={"docs": docs}).status_code == 201
        figures["_bulk_docs docs/s"] = batches * 100 / (time.monotonic() - started)
        figures["_bulk_docs cpu ms/1000 docs"] = (cpu_ms(server.pid) - cpu) * 1000 / (batches * 100)
        return figures
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--singles", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=100)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for index in range(args.rounds):
        order = ["before", "after"] if index % 2 == 0 else ["after", "before"]
        for name in order:
            figures = one_round(getattr(args, name), args.singles, args.batches)
            runs[name].append(figures)
            print(index, name, {key: round(value, 1) for key, value in figures.items()}, flush=True)
    for key in runs["before"][0]:
        before = statistics.median(run[key] for run in runs["before"])
        after = statistics.median(run[key] for run in runs["after"])
        print(f"{key}: before {before:.1f}, after {after:.1f}, after/before {after / before:.3f}")


if __name__ == "__main__":
    main()
