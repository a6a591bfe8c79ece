#!/usr/bin/env python3
"""Mango queries over N photo documents, against one or more running servers in the same run.

    python3 bench/mango.py URL [URL ...] [--docs 100000] [--rounds 3] [--queries 20] [--smoke]

Each URL is a server (http://user:pass@host:port): couchlite, CouchDB 3.4.3, or both. Rounds alternate the
servers (A B A B …) so that each sees about the same load. Per server, once: a fresh single-shard database with N
documents `{"type","taken","camera","size"}` (`taken` one of 730 days from 2023-01-01, `type` "photo" for 9 in
10, 8 cameras) written with `_bulk_docs` (not timed). Then, timed, per round:
  build      POST /_index {"fields":["taken"]} under a fresh name, then the first `_find` that uses it
             (every document indexed)
  indexed    `_find` of one month (`taken` in [2023-03-01, 2023-04-01)), sorted by `taken`, limit 10,000:
             queries per second over --queries queries
  unindexed  `_find` `{"camera":"cam3","size":{"$gt":4000000}}` (no index: every document read), limit 10,000
--smoke: 2,000 documents, one round, checks the answers, exits non-zero on any error.
"""

import argparse
import datetime
import statistics
import time
import urllib.parse
import uuid

import requests

MONTH = {"taken": {"$gte": "2023-03-01", "$lt": "2023-04-01"}}
UNINDEXED = {"camera": "cam3", "size": {"$gt": 4000000}}


def session(url):
    parts = urllib.parse.urlsplit(url)
    s = requests.Session()
    if parts.username:
        s.auth = (urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or ""))
    return s, f"{parts.scheme}://{parts.hostname}:{parts.port}"


def check(r):
    if r.status_code not in (200, 201, 202):
        raise SystemExit(f"unexpected {r.status_code}: {r.text[:300]}")
    return r


def photo(i):
    day = datetime.date(2023, 1, 1) + datetime.timedelta(days=(i * 7919) % 730)
    return {"_id": f"photo{i:07d}", "type": "photo" if i % 10 else "video", "taken": day.isoformat(),
            "camera": f"cam{i % 8}", "size": (i * 104729) % 8000000}


def expected(docs):
    month = sum(1 for i in range(docs) if "2023-03-01" <= photo(i)["taken"] < "2023-04-01")
    unindexed = sum(1 for i in range(docs) if photo(i)["camera"] == "cam3" and photo(i)["size"] > 4000000)
    return month, unindexed


class Server:
    def __init__(self, url, docs):
        self.s, base = session(url)
        self.vendor = self.s.get(base + "/").json().get("vendor", {}).get("name", "?")
        self.db = f"{base}/mango-bench-{uuid.uuid4().hex[:8]}"
        check(self.s.put(self.db, params={"q": "1"}))
        for start in range(0, docs, 5000):
            check(self.s.post(self.db + "/_bulk_docs",
                              json={"docs": [photo(i) for i in range(start, min(docs, start + 5000))]}))
        self.results = {"build_s": [], "indexed_qps": [], "unindexed_s": []}

    def find(self, body):
        return check(self.s.post(self.db + "/_find", json=body, timeout=3600)).json()

    def round(self, number, queries, want):
        name = f"taken-{number}"
        t = time.perf_counter()
        check(self.s.post(self.db + "/_index", json={"index": {"fields": ["taken"]}, "ddoc": name, "name": name}))
        first = self.find({"selector": MONTH, "sort": ["taken"], "limit": 1, "use_index": name})
        self.results["build_s"].append(time.perf_counter() - t)
        assert "warning" not in first, first
        t = time.perf_counter()
        for _ in range(queries):
            body = self.find({"selector": MONTH, "sort": ["taken"], "limit": 10000, "use_index": name})
            assert len(body["docs"]) == want[0], (len(body["docs"]), want[0])
        self.results["indexed_qps"].append(queries / (time.perf_counter() - t))
        t = time.perf_counter()
        body = self.find({"selector": UNINDEXED, "limit": 10000})
        self.results["unindexed_s"].append(time.perf_counter() - t)
        assert len(body["docs"]) == want[1], (len(body["docs"]), want[1])

    def close(self):
        self.s.delete(self.db)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--docs", type=int, default=100000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.docs, args.rounds, args.queries = 2000, 1, 2
    want = expected(args.docs)
    servers = [Server(url, args.docs) for url in args.urls]
    try:
        for number in range(args.rounds):
            for server in servers:
                server.round(number, args.queries, want)
    finally:
        for server in servers:
            server.close()
    print(f"{args.docs} documents, {args.rounds} rounds, month = {want[0]} docs, unindexed = {want[1]} docs")
    print("| server | build (s) | indexed (queries/s) | unindexed (s) |")
    print("|---|---|---|---|")
    for server in servers:
        r = server.results
        print(f"| {server.vendor} | {statistics.median(r['build_s']):.2f} | "
              f"{statistics.median(r['indexed_qps']):.1f} | {statistics.median(r['unindexed_s']):.2f} |")
        print(f"  runs: build {[round(x, 2) for x in r['build_s']]}, indexed {[round(x, 1) for x in r['indexed_qps']]},"
              f" unindexed {[round(x, 2) for x in r['unindexed_s']]}")


if __name__ == "__main__":
    main()
