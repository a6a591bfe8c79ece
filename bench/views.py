#!/usr/bin/env python3
"""Building a view over N small documents (index build speed), against one or more running servers in the same run.

    python3 bench/views.py URL [URL ...] [--docs 100000] [--smoke]

Each URL is a server (http://user:pass@host:port): couchlite, CouchDB 3.4.3, or both. For each server: a fresh
single-shard database, N documents `{"n": i, "v": i % 7, "tag": "t<i % 100>"}` written with `_bulk_docs` in
batches of 5,000 (not timed), then, timed:
  build     the first query of a map view (`emit(doc.tag, doc.v)`), i.e. mapping every document
  query     the same query again (nothing to map)
  reduce    `_sum` over the whole view, then `group=true` (100 groups), on a second view of the design document
  update    1,000 documents rewritten, then one query (only the changed documents are mapped)
--smoke: 2,000 documents, checks the answers, exits non-zero on any error (bench/smoke.sh runs it).
"""

import json
import sys
import time
import urllib.parse
import uuid

import requests

DDOC = {
    "views": {
        "by_tag": {"map": "function(doc) { if (doc.tag) emit(doc.tag, doc.v); }"},
        "sum_by_tag": {"map": "function(doc) { if (doc.tag) emit(doc.tag, doc.v); }", "reduce": "_sum"},
    }
}


def session(url):
    parts = urllib.parse.urlsplit(url)
    s = requests.Session()
    if parts.username:
        s.auth = (urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or ""))
    base = f"{parts.scheme}://{parts.hostname}:{parts.port}"
    return s, base


def check(r, status=(200, 201, 202)):
    if r.status_code not in status:
        raise SystemExit(f"unexpected {r.status_code}: {r.text[:300]}")
    return r


def run(url, docs):
    s, base = session(url)
    vendor = s.get(base + "/").json().get("vendor", {}).get("name", "?")
    db = f"{base}/bench-views-{uuid.uuid4().hex[:8]}"
    check(s.put(db, params={"q": "1"}))
    try:
        for start in range(0, docs, 5000):
            batch = [{"_id": f"doc{i:07d}", "n": i, "v": i % 7, "tag": f"t{i % 100}"}
                     for i in range(start, min(docs, start + 5000))]
            check(s.post(db + "/_bulk_docs", json={"docs": batch}))
        check(s.put(db + "/_design/b", json=DDOC))
        out = {"server": vendor, "docs": docs}
        t = time.perf_counter()
        body = check(s.get(db + "/_design/b/_view/by_tag", params={"limit": 1}, timeout=3600)).json()
        out["build_s"] = time.perf_counter() - t
        assert body["total_rows"] == docs, body
        t = time.perf_counter()
        check(s.get(db + "/_design/b/_view/by_tag", params={"limit": 1}))
        out["query_ms"] = (time.perf_counter() - t) * 1000
        # The reduce view shares the index with the map view (one design document, one build).
        t = time.perf_counter()
        total = check(s.get(db + "/_design/b/_view/sum_by_tag", timeout=3600)).json()["rows"][0]["value"]
        out["reduce_ms"] = (time.perf_counter() - t) * 1000
        assert total == sum(i % 7 for i in range(docs)), total
        t = time.perf_counter()
        groups = check(s.get(db + "/_design/b/_view/sum_by_tag", params={"group": "true"})).json()["rows"]
        out["group_ms"] = (time.perf_counter() - t) * 1000
        assert len(groups) == min(100, docs), len(groups)
        changed = min(1000, docs)
        ids = [f"doc{i:07d}" for i in range(changed)]
        current = check(s.post(db + "/_all_docs", json={"keys": ids})).json()["rows"]
        rewrite = [{"_id": r["id"], "_rev": r["value"]["rev"], "n": 0, "v": 1, "tag": "t0"} for r in current]
        check(s.post(db + "/_bulk_docs", json={"docs": rewrite}))
        t = time.perf_counter()
        check(s.get(db + "/_design/b/_view/by_tag", params={"limit": 1}, timeout=3600))
        out["update_1000_ms"] = (time.perf_counter() - t) * 1000
        out["docs_per_s"] = docs / out["build_s"]
        return out
    finally:
        s.delete(db)


def main(argv):
    smoke = "--smoke" in argv
    docs = 2000 if smoke else 100_000
    urls = []
    i = 0
    args = [a for a in argv if a != "--smoke"]
    while i < len(args):
        if args[i] == "--docs":
            docs = int(args[i + 1])
            i += 2
            continue
        urls.append(args[i])
        i += 1
    if not urls:
        raise SystemExit(__doc__)
    for url in urls:
        result = run(url, docs)
        print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in result.items()}))


if __name__ == "__main__":
    main(sys.argv[1:])
