"""Reduces over views larger than one stored chunk: sums, counts, stats and a JavaScript reduce over key ranges
(inclusive or not, with doc id bounds, descending) and group levels must equal what Python computes from the rows,
after the first build and after incremental rewrites and deletions. couchlite answers these from partial
reductions stored per chunk of about 64 rows (CouchDB from its B-tree's inner nodes): ranges that start and end
inside chunks, groups that span several chunks and chunks that span several groups are all here.
Integer values only, so every summation order gives the same number. Runs unchanged against CouchDB 3.4.3.
"""

import json

import pytest

from test_views import bulk, ddoc

MAP = "function(doc) { if (doc.k !== undefined) emit(doc.k, doc.v); }"
N = 700


def docs(version=0):
    return [{"_id": f"d{i:04d}", "k": [i % 3, (i * 7) % 11, i], "v": (i * 13 + version) % 17 - 5} for i in range(N)]


def params(**query):
    return {k: json.dumps(v) if k in ("startkey", "endkey", "keys") else str(v).lower() if isinstance(v, bool) else v
            for k, v in query.items()}


def expected(rows, level, reducer):
    groups = []
    for key, doc_id, value in rows:
        group = None if level == 0 else key if level is True else key[:level]
        if groups and groups[-1][0] == group:
            groups[-1][1].append(value)
        else:
            groups.append((group, [value]))
    out = []
    for group, values in groups:
        if reducer == "sum" or reducer == "js":
            value = sum(values)
        elif reducer == "count":
            value = len(values)
        else:
            value = {"sum": sum(values), "count": len(values), "min": min(values), "max": max(values),
                     "sumsqr": sum(v * v for v in values)}
        out.append({"key": group, "value": value})
    return out


RANGES = [
    {},
    {"startkey": [1], "endkey": [2, 5]},
    {"startkey": [0, 3, 100], "endkey": [0, 3, {}]},
    {"startkey": [1, 4], "endkey": [2], "inclusive_end": False},
    {"startkey": [2, 6], "endkey": [0, 9], "descending": True},
    {"startkey": [1, 2, 0], "startkey_docid": "d0300", "endkey": [2, 1, 0], "endkey_docid": "d0100"},
    {"descending": True, "endkey": [1, 10, 500], "inclusive_end": False},
]


def compare(key, doc_id, bound):
    """-1, 0 or 1 as a row sorts before, inside or after a range bound (key, doc id or None) in view order. Keys
    are arrays of integers; `{}` sorts after every number, a shorter array before its extensions."""
    bound_key, bound_id = bound
    for a, b in zip(key, bound_key):
        if b == {}:
            return -1
        if a != b:
            return -1 if a < b else 1
    if len(key) != len(bound_key):
        return 1 if len(key) > len(bound_key) else -1
    if bound_id is None or doc_id == bound_id:
        return 0
    return -1 if doc_id < bound_id else 1


def in_range(row, query):
    key, doc_id, _ = row
    start = (query.get("startkey"), query.get("startkey_docid"))
    end = (query.get("endkey"), query.get("endkey_docid"))
    descending = query.get("descending", False)
    exclusive_end = not query.get("inclusive_end", True)
    low, high = (end, start) if descending else (start, end)
    if low[0] is not None:
        c = compare(key, doc_id, low)
        if c < 0 or (c == 0 and descending and exclusive_end):
            return False
    if high[0] is not None:
        c = compare(key, doc_id, high)
        if c > 0 or (c == 0 and not descending and exclusive_end):
            return False
    return True


def check(couch, db, current):
    ordered = sorted(((d["k"], d["_id"], d["v"]) for d in current), key=lambda r: (r[0], r[1]))
    for query in RANGES:
        selected = [r for r in ordered if in_range(r, query)]
        if query.get("descending"):
            selected.reverse()
        for level in (0, 1, 2, True):
            grouping = {} if level == 0 else {"group": True} if level is True else {"group_level": level}
            for reducer in ("sum", "count", "stats", "js"):
                r = couch.get(f"/{db}/_design/r/_view/{reducer}", params=params(**query, **grouping))
                assert r.status_code == 200, r.text
                want = expected(selected, level, reducer)
                assert r.json()["rows"] == want, (reducer, query, grouping)


@pytest.fixture
def rdb(couch, ordered_db):
    bulk(couch, ordered_db, docs())
    ddoc(couch, ordered_db, "r", {
        "sum": {"map": MAP, "reduce": "_sum"},
        "count": {"map": MAP, "reduce": "_count"},
        "stats": {"map": MAP, "reduce": "_stats"},
        "js": {"map": MAP, "reduce": "function(keys, values, rereduce) { return sum(values); }"},
    })
    return ordered_db


def test_reduces_over_ranges_and_groups_after_build_and_updates(couch, rdb):
    current = docs()
    check(couch, rdb, current)
    revs = {r["id"]: r["value"]["rev"] for r in couch.get(f"/{rdb}/_all_docs").json()["rows"]}
    changed, kept = [], []
    for doc in current:
        i = int(doc["_id"][1:])
        if i % 23 == 0:
            changed.append({"_id": doc["_id"], "_rev": revs[doc["_id"]], "_deleted": True})
        elif i % 9 == 0:
            doc = {**doc, "_rev": revs[doc["_id"]], "k": [(i + 1) % 3, i % 11, i], "v": i % 5}
            changed.append(doc)
            kept.append(doc)
        else:
            kept.append(doc)
    bulk(couch, rdb, changed)
    check(couch, rdb, kept)
