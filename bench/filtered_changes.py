#!/usr/bin/env python3
"""`_changes?filter=ddoc/name` over N small documents, couchlite and (optionally) CouchDB in the same run.

    python3 bench/filtered_changes.py --couchlite-bin .build/release/couchlite \
        [--couchdb http://admin:pass@127.0.0.1:5984] [--docs 100000] [--runs 3] [--couchdb-runs 1]
    python3 bench/filtered_changes.py --url URL --docs 2000 --runs 1     # smoke against a running server

Each server gets a fresh database of N documents `{"type": "a"|"b", "n": i}` (loaded with `_bulk_docs`,
10,000 per request) and a design document with the filter `function(doc, req) { return doc.type ==
req.query.type; }`. A timed run is one `GET /db/_changes?filter=app/by_type&type=a` (a normal feed read to
its end); the unfiltered feed is timed too, as the floor. The first filtered run is a warm-up (it starts the
JavaScript workers and compiles the function), reported on its own, followed by RUNS - 1 timed runs (with
`--runs 1` the first run is the figure). Prints one JSON line per server.
Uses only the standard library.
"""

import argparse
import base64
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid

FILTER = "function(doc, req) { return doc.type == req.query.type; }"


class Server:
    def __init__(self, url):
        parts = urllib.parse.urlsplit(url)
        self.base = f"{parts.scheme}://{parts.hostname}:{parts.port}"
        token = base64.b64encode(f"{urllib.parse.unquote(parts.username or '')}:"
                                 f"{urllib.parse.unquote(parts.password or '')}".encode()).decode()
        self.headers = {"Authorization": "Basic " + token, "Content-Type": "application/json"}

    def call(self, method, path, body=None, timeout=600):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_couchlite(binary):
    port = free_port()
    data = tempfile.mkdtemp(prefix="bench-filter-")
    process = subprocess.Popen(
        [binary, "--port", str(port), "--data-dir", data + "/d", "--admin", "bench:bench", "--log-level", "error",
         "--pbkdf2-iterations", "1000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://bench:bench@127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if Server(url).call("GET", "/_up", timeout=2)[0] == 200:
                return process, data, url
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("couchlite did not start")


def load(server, db, docs):
    status, body = server.call("PUT", f"/{db}")
    assert status in (201, 202), body
    status, body = server.call("PUT", f"/{db}/_design/app", {"filters": {"by_type": FILTER}})
    assert status in (201, 202), body
    started = time.perf_counter()
    for first in range(0, docs, 10_000):
        batch = [{"_id": f"doc-{i:07d}", "_rev": "1-" + uuid.uuid5(uuid.NAMESPACE_OID, str(i)).hex,
                  "type": "a" if i % 2 == 0 else "b", "n": i} for i in range(first, min(first + 10_000, docs))]
        status, body = server.call("POST", f"/{db}/_bulk_docs", {"new_edits": False, "docs": batch})
        assert status == 201, body[:300]
    return time.perf_counter() - started


def timed_feed(server, db, query):
    started = time.perf_counter()
    status, body = server.call("GET", f"/{db}/_changes?{query}")
    elapsed = time.perf_counter() - started
    assert status == 200, body[:300]
    return elapsed, len(json.loads(body)["results"])


def measure(name, url, docs, runs):
    server = Server(url)
    db = f"bench-filter-{uuid.uuid4().hex[:8]}"
    try:
        load_s = load(server, db, docs)
        plain = [timed_feed(server, db, "")[0] for _ in range(runs)]
        warm, rows = timed_feed(server, db, "filter=app/by_type&type=a")
        assert rows == (docs + 1) // 2, (rows, docs)
        # With --runs 1 the first run is the figure (CouchDB takes minutes per run over 100,000 documents).
        filtered = [timed_feed(server, db, "filter=app/by_type&type=a")[0] for _ in range(runs - 1)] or [warm]
        median = statistics.median(filtered)
        return {
            "server": name, "docs": docs, "passing": rows, "load_s": round(load_s, 2),
            "unfiltered_s": round(statistics.median(plain), 3), "filtered_first_s": round(warm, 3),
            "filtered_s": round(median, 3), "filtered_docs_per_s": round(docs / median),
            "runs": [round(r, 3) for r in filtered],
        }
    finally:
        server.call("DELETE", f"/{db}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--couchlite-bin", help="start this couchlite binary (release build for figures)")
    parser.add_argument("--url", help="an already running server (couchlite or CouchDB)")
    parser.add_argument("--couchdb", help="also measure this CouchDB, http://user:pass@host:port")
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3, help="filtered runs after the first (1: the first only)")
    parser.add_argument("--couchdb-runs", type=int, default=1,
                        help="the same for CouchDB (default 1: it takes minutes per run over 100,000 documents)")
    args = parser.parse_args()
    if not (args.couchlite_bin or args.url or args.couchdb):
        parser.error("give --couchlite-bin, --url or --couchdb")
    results = []
    if args.url:
        results.append(measure("server", args.url, args.docs, args.runs))
    if args.couchlite_bin:
        process, data, url = start_couchlite(args.couchlite_bin)
        try:
            results.append(measure("couchlite", url, args.docs, args.runs))
        finally:
            process.terminate()
            process.wait(30)
            shutil.rmtree(data, ignore_errors=True)
    if args.couchdb:
        results.append(measure("couchdb", args.couchdb, args.docs, args.couchdb_runs))
    for result in results:
        print(json.dumps(result))
    if len(results) >= 2:
        ratio = results[-1]["filtered_s"] / results[-2]["filtered_s"]
        print(f"couchdb time / couchlite time: {ratio:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
