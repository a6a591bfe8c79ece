"""Views: GET/POST /db/_design/d/_view/v with every query parameter, the built-in and JavaScript reduces,
incremental index updates (writes, deletions, conflicts), _info, _view_cleanup, compaction, and CouchDB's errors.
Every test runs unchanged against CouchDB 3.4.3 (single-shard databases, so offsets and orders are one total order).
"""

import json
import time

import pytest

from conftest import is_couchlite
from test_auth import users  # noqa: F401 (the fixture)

BY_K = "function(doc) { if (doc.k !== undefined) emit(doc.k, doc.v === undefined ? null : doc.v); }"


def bulk(couch, db, docs, **body):
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": docs, **body})
    assert r.status_code == 201, r.text
    return r.json()


def ddoc(couch, db, name, views, **extra):
    r = couch.put(f"/{db}/_design/{name}", json={"views": views, **extra})
    assert r.status_code == 201, r.text
    return r.json()["rev"]


def view(couch, db, path, **params):
    encoded = {k: (json.dumps(v) if k in ("key", "keys", "startkey", "endkey", "start_key", "end_key")
                   else str(v).lower() if isinstance(v, bool) else v) for k, v in params.items()}
    return couch.get(f"/{db}/_design/{path}", params=encoded)


def rows(couch, db, path, **params):
    r = view(couch, db, path, **params)
    assert r.status_code == 200, r.text
    return r.json()["rows"]


@pytest.fixture
def kdb(couch, ordered_db):
    """Ten documents d0..d9 with k = i // 2 (two rows per key) and v = i, and a design document `d`."""
    bulk(couch, ordered_db, [{"_id": f"d{i}", "k": i // 2, "v": i} for i in range(10)])
    ddoc(couch, ordered_db, "d", {
        "k": {"map": BY_K},
        "count": {"map": BY_K, "reduce": "_count"},
        "sum": {"map": BY_K, "reduce": "_sum"},
        "stats": {"map": BY_K, "reduce": "_stats"},
        "distinct": {"map": BY_K, "reduce": "_approx_count_distinct"},
        "js": {"map": BY_K, "reduce": "function(keys, values, rereduce) { return sum(values); }"},
    })
    return ordered_db


def test_map_view_shape_and_order(couch, kdb):
    r = view(couch, kdb, "d/_view/k")
    assert r.status_code == 200
    body = r.json()
    assert list(body) == ["total_rows", "offset", "rows"]
    assert body["total_rows"] == 10 and body["offset"] == 0
    assert body["rows"][0] == {"id": "d0", "key": 0, "value": 0}
    assert [row["id"] for row in body["rows"]] == [f"d{i}" for i in range(10)]
    assert r.text.endswith("\n")


def test_key_keys_and_ranges(couch, kdb):
    assert [r["id"] for r in rows(couch, kdb, "d/_view/k", key=2)] == ["d4", "d5"]
    assert [r["id"] for r in rows(couch, kdb, "d/_view/k", keys=[3, 1, 9])] == ["d6", "d7", "d2", "d3"]
    post = couch.post(f"/{kdb}/_design/d/_view/k", json={"keys": [4, 0]})
    assert post.status_code == 200 and [r["id"] for r in post.json()["rows"]] == ["d8", "d9", "d0", "d1"]
    assert [r["key"] for r in rows(couch, kdb, "d/_view/k", startkey=1, endkey=2)] == [1, 1, 2, 2]
    assert [r["key"] for r in rows(couch, kdb, "d/_view/k", start_key=3, end_key=4)] == [3, 3, 4, 4]
    assert [r["key"] for r in rows(couch, kdb, "d/_view/k", startkey=1, endkey=2, inclusive_end=False)] == [1, 1]
    got = rows(couch, kdb, "d/_view/k", startkey=1, startkey_docid="d3", endkey=2, endkey_docid="d4")
    assert [r["id"] for r in got] == ["d3", "d4"]
    got = rows(couch, kdb, "d/_view/k", startkey=1, endkey=2, endkey_docid="d5", inclusive_end=False)
    assert [r["id"] for r in got] == ["d2", "d3", "d4"]


def test_descending_limit_skip_offset(couch, kdb):
    body = view(couch, kdb, "d/_view/k", descending=True, limit=3, skip=1).json()
    assert [r["id"] for r in body["rows"]] == ["d8", "d7", "d6"]
    assert body["offset"] == 1
    got = rows(couch, kdb, "d/_view/k", descending=True, startkey=3, endkey=2)
    assert [r["id"] for r in got] == ["d7", "d6", "d5", "d4"]
    got = rows(couch, kdb, "d/_view/k", descending=True, startkey=3, endkey=2, inclusive_end=False)
    assert [r["id"] for r in got] == ["d7", "d6"]
    assert view(couch, kdb, "d/_view/k", startkey=2).json()["offset"] == 4
    assert rows(couch, kdb, "d/_view/k", limit=0) == []
    assert rows(couch, kdb, "d/_view/k", skip=100) == []


def test_include_docs_conflicts_and_linked_documents(couch, ordered_db):
    bulk(couch, ordered_db, [{"_id": "a", "k": 1}, {"_id": "b", "k": 2, "v": {"_id": "a"}}])
    bulk(couch, ordered_db, [{"_id": "a", "_rev": "1-0000000000000000000000000000000a", "k": 9}], new_edits=False)
    ddoc(couch, ordered_db, "d", {"k": {"map": BY_K}})
    got = rows(couch, ordered_db, "d/_view/k", include_docs=True, conflicts=True)
    by_id = {r["id"]: r for r in got}
    assert by_id["b"]["doc"]["_id"] == "a"  # a value {"_id": …} links the row to that document
    assert by_id["b"]["doc"]["k"] == by_id["a"]["doc"]["k"]
    assert "_conflicts" in by_id["a"]["doc"]
    plain = rows(couch, ordered_db, "d/_view/k", include_docs=True)
    assert all("_conflicts" not in r["doc"] for r in plain)


def test_update_seq_and_stale(couch, kdb):
    body = view(couch, kdb, "d/_view/k", update_seq=True).json()
    assert list(body) == ["total_rows", "offset", "update_seq", "rows"]
    seq = couch.get(f"/{kdb}").json()["update_seq"]
    assert str(body["update_seq"]).split("-")[0] == str(seq).split("-")[0]
    assert couch.put(f"/{kdb}/new", json={"k": 50, "v": 1}).status_code == 201
    # Stale reads answer from the index as it is. CouchDB's background indexer (ken) may have caught up already;
    # couchlite updates an index only when it is queried, so there it is exactly the old state.
    stale = (10,) if is_couchlite(couch) else (10, 11)
    assert view(couch, kdb, "d/_view/k", stale="ok").json()["total_rows"] in stale
    assert view(couch, kdb, "d/_view/k", update="false").json()["total_rows"] in stale
    assert view(couch, kdb, "d/_view/k", stale="update_after").json()["total_rows"] in stale
    assert view(couch, kdb, "d/_view/k", update="lazy").json()["total_rows"] in (10, 11)
    latest = view(couch, kdb, "d/_view/k")
    assert latest.json().get("total_rows") == 11, latest.text
    assert couch.put(f"/{kdb}/new2", json={"k": 51, "v": 1}).status_code == 201
    assert view(couch, kdb, "d/_view/k", update="true").json()["total_rows"] == 12


def test_builtin_reduces(couch, kdb):
    assert rows(couch, kdb, "d/_view/count") == [{"key": None, "value": 10}]
    assert rows(couch, kdb, "d/_view/sum") == [{"key": None, "value": 45}]
    assert rows(couch, kdb, "d/_view/stats") == [
        {"key": None, "value": {"sum": 45, "count": 10, "min": 0, "max": 9, "sumsqr": 285}}]
    assert rows(couch, kdb, "d/_view/distinct") == [{"key": None, "value": 5}]
    assert rows(couch, kdb, "d/_view/js") == [{"key": None, "value": 45}]
    grouped = rows(couch, kdb, "d/_view/sum", group=True)
    assert grouped == [{"key": i, "value": 4 * i + 1} for i in range(5)]
    assert rows(couch, kdb, "d/_view/count", group=True, limit=2, skip=1, descending=True) == [
        {"key": 3, "value": 2}, {"key": 2, "value": 2}]
    assert rows(couch, kdb, "d/_view/sum", startkey=1, endkey=2) == [{"key": None, "value": 14}]
    assert rows(couch, kdb, "d/_view/sum", reduce=False, key=1) == [
        {"id": "d2", "key": 1, "value": 2}, {"id": "d3", "key": 1, "value": 3}]
    assert rows(couch, kdb, "d/_view/count", keys=[4, 1], group=True) == [
        {"key": 4, "value": 2}, {"key": 1, "value": 2}]
    assert rows(couch, kdb, "d/_view/count", startkey=100) == []


def test_group_level_and_javascript_rereduce(couch, ordered_db):
    docs = [{"k": ["a", i % 3, i], "v": 1} for i in range(30)] + [{"k": "plain", "v": 5}]
    bulk(couch, ordered_db, docs)
    ddoc(couch, ordered_db, "g", {
        "sum": {"map": BY_K, "reduce": "_sum"},
        "js": {"map": BY_K, "reduce": "function(k, v, re) { return sum(v); }"},
    })
    assert rows(couch, ordered_db, "g/_view/sum", group_level=1) == [
        {"key": "plain", "value": 5}, {"key": ["a"], "value": 30}]
    assert rows(couch, ordered_db, "g/_view/js", group_level=2) == [
        {"key": "plain", "value": 5}, {"key": ["a", 0], "value": 10}, {"key": ["a", 1], "value": 10},
        {"key": ["a", 2], "value": 10}]
    assert len(rows(couch, ordered_db, "g/_view/js", group=True)) == 31
    assert rows(couch, ordered_db, "g/_view/js", group_level=0) == [{"key": None, "value": 35}]


def test_sum_of_arrays_objects_and_its_error_value(couch, ordered_db):
    bulk(couch, ordered_db, [{"k": 1, "v": [1, 2]}, {"k": 2, "v": [10]}, {"k": 3, "v": 5},
                             {"k": 4, "o": {"a": 1, "b": {"c": 2}}}, {"k": 5, "o": {"b": {"c": 3}, "z": 1}},
                             {"k": 6, "s": "text"}])
    ddoc(couch, ordered_db, "s", {
        "arrays": {"map": "function(d) { if (d.v) emit(d.k, d.v); }", "reduce": "_sum"},
        "objects": {"map": "function(d) { if (d.o) emit(d.k, d.o); }", "reduce": "_sum"},
        "strings": {"map": "function(d) { if (d.s) emit(d.k, d.s); }", "reduce": "_sum"},
    })
    assert rows(couch, ordered_db, "s/_view/arrays") == [{"key": None, "value": [16, 2]}]
    assert rows(couch, ordered_db, "s/_view/objects") == [{"key": None, "value": {"a": 1, "b": {"c": 5}, "z": 1}}]
    value = rows(couch, ordered_db, "s/_view/strings")[0]["value"]
    assert value["error"] == "builtin_reduce_error"
    assert value["reason"].startswith("The _sum function requires that map values be numbers")
    assert value["caused_by"] == "text"


def test_stats_of_a_string_is_invalid_value(couch, ordered_db):
    bulk(couch, ordered_db, [{"k": 1, "s": "x"}])
    ddoc(couch, ordered_db, "st", {"bad": {"map": "function(d) { if (d.s) emit(d.k, d.s); }", "reduce": "_stats"}})
    r = view(couch, ordered_db, "st/_view/bad")
    assert r.status_code == 500
    assert r.json()["error"] == "invalid_value"


def test_incremental_updates_after_writes_and_deletions(couch, kdb):
    assert len(rows(couch, kdb, "d/_view/k")) == 10
    rev = couch.get(f"/{kdb}/d0").json()["_rev"]
    assert couch.put(f"/{kdb}/d0", params={"rev": rev}, json={"k": 100, "v": 0}).status_code == 201
    rev = couch.get(f"/{kdb}/d1").json()["_rev"]
    assert couch.delete(f"/{kdb}/d1", params={"rev": rev}).status_code == 200
    assert couch.put(f"/{kdb}/d10", json={"k": -1, "v": 10}).status_code == 201
    got = rows(couch, kdb, "d/_view/k")
    assert [r["id"] for r in got] == ["d10", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d0"]
    assert rows(couch, kdb, "d/_view/sum") == [{"key": None, "value": 54}]
    # A document that stops emitting leaves the view.
    rev = couch.get(f"/{kdb}/d2").json()["_rev"]
    assert couch.put(f"/{kdb}/d2", params={"rev": rev}, json={}).status_code == 201
    assert "d2" not in [r["id"] for r in rows(couch, kdb, "d/_view/k")]


def test_only_the_winning_revision_is_mapped(couch, ordered_db):
    ddoc(couch, ordered_db, "c", {"k": {"map": BY_K},
                                  "conflicts": {"map": "function(d) { if (d._conflicts) emit(d._id, d._conflicts); }"}})
    bulk(couch, ordered_db, [{"_id": "x", "_rev": "1-" + "a" * 32, "k": "loser"},
                             {"_id": "x", "_rev": "1-" + "b" * 32, "k": "winner"}], new_edits=False)
    assert [r["key"] for r in rows(couch, ordered_db, "c/_view/k")] == ["winner"]
    assert rows(couch, ordered_db, "c/_view/conflicts") == [{"id": "x", "key": "x", "value": ["1-" + "a" * 32]}]
    assert couch.delete(f"/{ordered_db}/x", params={"rev": "1-" + "b" * 32}).status_code == 200
    assert [r["key"] for r in rows(couch, ordered_db, "c/_view/k")] == ["loser"]
    assert rows(couch, ordered_db, "c/_view/conflicts") == []


def test_design_documents_are_not_mapped_unless_include_design(couch, ordered_db):
    every = "function(d) { emit(d._id, null); }"
    ddoc(couch, ordered_db, "plain", {"all": {"map": every}})
    ddoc(couch, ordered_db, "incl", {"all": {"map": every}}, options={"include_design": True})
    assert couch.put(f"/{ordered_db}/doc", json={}).status_code == 201
    assert [r["id"] for r in rows(couch, ordered_db, "plain/_view/all")] == ["doc"]
    assert [r["id"] for r in rows(couch, ordered_db, "incl/_view/all")] == ["_design/incl", "_design/plain", "doc"]


def test_info_cleanup_and_compaction(couch, kdb):
    rows(couch, kdb, "d/_view/k")
    r = couch.get(f"/{kdb}/_design/d/_info")
    assert r.status_code == 200
    info = r.json()
    assert info["name"] == "d"
    index = info["view_index"]
    for member in ("signature", "update_seq", "sizes", "updater_running", "waiting_clients", "compact_running",
                   "language", "purge_seq", "updates_pending", "waiting_commit"):
        assert member in index, member
    assert index["language"] == "javascript"
    assert len(index["signature"]) == 32
    assert set(index["sizes"]) >= {"file", "external", "active"}
    assert couch.post(f"/{kdb}/_design/d/_info", json={}).status_code == 405
    # The same views under another name share the signature; a changed view gets a new one.
    views = couch.get(f"/{kdb}/_design/d").json()["views"]
    ddoc(couch, kdb, "twin", views)
    assert couch.get(f"/{kdb}/_design/twin/_info").json()["view_index"]["signature"] == index["signature"]
    ddoc(couch, kdb, "other", {"k": {"map": "function(d) { emit(d._id, 1); }"}})
    assert couch.get(f"/{kdb}/_design/other/_info").json()["view_index"]["signature"] != index["signature"]
    r = couch.post(f"/{kdb}/_view_cleanup", json={})
    assert r.status_code == 202 and r.json() == {"ok": True}
    assert couch.post(f"/{kdb}/_compact/d", json={}).status_code == 202
    assert couch.post(f"/{kdb}/_compact/nope", json={}).status_code == 404
    assert couch.post(f"/{kdb}/_compact", json={}).status_code == 202
    deadline = time.monotonic() + 20
    while couch.get(f"/{kdb}").json().get("compact_running"):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert len(rows(couch, kdb, "d/_view/k")) == 10
    assert rows(couch, kdb, "d/_view/sum") == [{"key": None, "value": 45}]
    assert couch.get(f"/{kdb}/_design/nope/_info").status_code == 404


QUERY_ERRORS = [
    ("k", {"group": "true"}, 400, "query_parse_error", "Invalid use of grouping on a map view."),
    ("k", {"group_level": "1"}, 400, "query_parse_error", "Invalid use of grouping on a map view."),
    ("k", {"reduce": "true"}, 400, "query_parse_error", "Reduce is invalid for map-only views."),
    ("sum", {"include_docs": "true"}, 400, "query_parse_error", "`include_docs` is invalid for reduce"),
    ("sum", {"conflicts": "true"}, 400, "query_parse_error", "`conflicts` is invalid for reduce views."),
    ("sum", {"keys": "[1,2]"}, 400, "query_parse_error", "Multi-key fetches for reduce views must use `group=true`"),
    ("k", {"keys": "[1,2]", "startkey": "1"}, 400, "query_parse_error",
     "`keys` is incompatible with `key`, `start_key` and `end_key`"),
    ("k", {"limit": "-1"}, 400, "query_parse_error", 'Invalid value for positive integer: "-1"'),
    ("k", {"limit": "x"}, 400, "query_parse_error", 'Invalid value for integer: "x"'),
    ("k", {"skip": "-2"}, 400, "query_parse_error", 'Invalid value for positive integer: "-2"'),
    ("k", {"descending": "yes"}, 400, "query_parse_error", 'Invalid boolean parameter: "yes"'),
    ("k", {"stale": "later"}, 400, "query_parse_error", "Invalid value for `stale`."),
    ("k", {"update": "maybe"}, 400, "query_parse_error", "Invalid value for `update`."),
    ("k", {"startkey": "2", "endkey": "1"}, 400, "query_parse_error",
     "No rows can match your key range, reverse your start_key and end_key or set descending=true"),
    ("k", {"startkey": "1", "endkey": "2", "descending": "true"}, 400, "query_parse_error",
     "No rows can match your key range, reverse your start_key and end_key or set descending=false"),
    ("sum", {"group": "false", "group_level": "1"}, 400, "query_parse_error",
     "Can't specify group=false and group_level>0 at the same time"),
    ("nope", {}, 404, "not_found", "missing_named_view"),
]


@pytest.mark.parametrize("name,params,status,error,reason", QUERY_ERRORS)
def test_query_errors(couch, kdb, name, params, status, error, reason):
    r = couch.get(f"/{kdb}/_design/d/_view/{name}", params=params)
    assert r.status_code == status, r.text
    assert r.json()["error"] == error
    assert r.json()["reason"] == reason


def test_missing_design_document_and_bad_json(couch, kdb):
    r = couch.get(f"/{kdb}/_design/nope/_view/k")
    assert r.status_code == 404 and r.json() == {"error": "not_found", "reason": "missing"}
    r = couch.get(f"/{kdb}/_design/d/_view/k", params={"key": "not json"})
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    r = couch.post(f"/{kdb}/_design/d/_view/k", data=b"[1]", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert couch.request("PUT", f"/{kdb}/_design/d/_view/k", json={}).status_code == 405


def test_members_query_views_but_only_admins_change_them(couch, kdb, users):
    import requests

    member, outsider = users(), users()
    security = {"admins": {"names": [], "roles": []}, "members": {"names": [member[0]], "roles": []}}
    assert couch.put(f"/{kdb}/_security", json=security).status_code == 200
    as_member = requests.Session()
    as_member.auth = member
    as_outsider = requests.Session()
    as_outsider.auth = outsider
    url = couch.url(f"/{kdb}/_design/d/_view/k")
    assert as_member.get(url, params={"key": "1"}).status_code == 200
    r = as_member.post(url, json={"keys": [1, 2]})
    assert r.status_code == 200 and len(r.json()["rows"]) == 4
    assert as_outsider.get(url).status_code == 403
    assert as_outsider.post(url, json={"keys": [1]}).status_code == 403
    assert as_member.put(couch.url(f"/{kdb}/_design/x"), json={"views": {}}).status_code == 403
    assert as_member.post(couch.url(f"/{kdb}/_view_cleanup"), json={}).status_code == 401
    assert as_member.get(couch.url(f"/{kdb}/_design/d/_info")).status_code == 200
