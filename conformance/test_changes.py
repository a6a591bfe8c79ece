"""_changes: normal, longpoll, continuous, eventsource, options and filters.

Sequences are opaque: they are only ever handed back as `since`.
"""

import json
import threading
import time

import pytest
import requests

from test_documents import make_conflict, put


def changes(couch, db, **params):
    r = couch.get(f"/{db}/_changes", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def test_normal_feed(couch, db):
    rev_a = put(couch, db, "a", {"v": 1})
    put(couch, db, "b", {"v": 2})
    couch.delete(f"/{db}/a", params={"rev": rev_a})
    body = changes(couch, db)
    assert set(body) >= {"results", "last_seq", "pending"}
    assert body["pending"] == 0
    rows = {row["id"]: row for row in body["results"]}
    assert set(rows) == {"a", "b"}
    assert rows["a"]["deleted"] is True
    assert rows["a"]["changes"][0]["rev"].startswith("2-")
    assert "deleted" not in rows["b"]
    assert all("seq" in row for row in body["results"])


def test_since_resumes(couch, db):
    put(couch, db, "a", {})
    first = changes(couch, db)
    put(couch, db, "b", {})
    after = changes(couch, db, since=json.dumps(first["last_seq"]) if not isinstance(first["last_seq"], str)
                    else first["last_seq"])
    assert [row["id"] for row in after["results"]] == ["b"]
    again = changes(couch, db, since=after["last_seq"])
    assert again["results"] == []
    # a row's own seq works as `since`
    assert [r["id"] for r in changes(couch, db, since=first["results"][0]["seq"])["results"]] == ["b"]


def test_since_now(couch, db):
    put(couch, db, "a", {})
    body = changes(couch, db, since="now")
    assert body["results"] == []
    put(couch, db, "b", {})
    assert [r["id"] for r in changes(couch, db, since=body["last_seq"])["results"]] == ["b"]


def test_limit_and_pending(couch, db):
    for i in range(5):
        put(couch, db, f"d{i}", {})
    body = changes(couch, db, limit=2)
    assert len(body["results"]) == 2
    assert body["pending"] == 3
    rest = changes(couch, db, since=body["last_seq"])
    assert len(rest["results"]) == 3 and rest["pending"] == 0
    got = [r["id"] for r in body["results"] + rest["results"]]
    assert sorted(got) == [f"d{i}" for i in range(5)]


def test_descending(couch, ordered_db):
    # One shard: CouchDB's q=2 shards interleave their rows, so only q=1 has one order to reverse.
    for i in range(3):
        put(couch, ordered_db, f"d{i}", {})
    asc = [r["id"] for r in changes(couch, ordered_db)["results"]]
    assert asc == ["d0", "d1", "d2"]
    desc = [r["id"] for r in changes(couch, ordered_db, descending="true")["results"]]
    assert desc == asc[::-1]


def test_style_all_docs_and_conflicts(couch, db):
    make_conflict(couch, db)
    main = changes(couch, db)["results"][0]
    assert main["changes"] == [{"rev": "2-" + "b" * 32}]
    all_docs = changes(couch, db, style="all_docs")["results"][0]
    assert sorted(c["rev"] for c in all_docs["changes"]) == ["2-" + c * 32 for c in "abc"]
    row = changes(couch, db, include_docs="true", conflicts="true")["results"][0]
    assert row["doc"]["_conflicts"] == ["2-" + "a" * 32]


def test_include_docs(couch, db):
    put(couch, db, "a", {"v": 42})
    row = changes(couch, db, include_docs="true")["results"][0]
    assert row["doc"]["v"] == 42 and row["doc"]["_id"] == "a"


def test_doc_ids_filter_get_and_post(couch, db):
    for i in "abc":
        put(couch, db, i, {})
    body = changes(couch, db, filter="_doc_ids", doc_ids=json.dumps(["a", "c"]))
    assert sorted(r["id"] for r in body["results"]) == ["a", "c"]
    r = couch.post(f"/{db}/_changes", params={"filter": "_doc_ids"}, json={"doc_ids": ["b"]})
    assert r.status_code == 200
    assert [row["id"] for row in r.json()["results"]] == ["b"]


@pytest.mark.parametrize("selector,expected", [
    ({"kind": "x"}, ["a", "c"]),
    ({"kind": {"$eq": "y"}}, ["b"]),
    ({"n": {"$gt": 1}}, ["b", "c"]),
    ({"n": {"$in": [1, 3]}}, ["a", "c"]),
    ({"extra": {"$exists": True}}, ["c"]),
    ({"$or": [{"kind": "y"}, {"n": 3}]}, ["b", "c"]),
    ({"meta.tag": "t1"}, ["a"]),
    ({"meta": {"tag": {"$eq": "t2"}}}, ["b"]),
])
def test_selector_filter(couch, db, selector, expected):
    put(couch, db, "a", {"kind": "x", "n": 1, "meta": {"tag": "t1"}})
    put(couch, db, "b", {"kind": "y", "n": 2, "meta": {"tag": "t2"}})
    put(couch, db, "c", {"kind": "x", "n": 3, "extra": True})
    r = couch.post(f"/{db}/_changes", params={"filter": "_selector"}, json={"selector": selector})
    assert r.status_code == 200, r.text
    assert sorted(row["id"] for row in r.json()["results"]) == expected


def test_unknown_filters(couch, db):
    r = couch.get(f"/{db}/_changes", params={"filter": "nosuchddoc/nosuchfilter"})
    assert r.status_code == 404
    assert r.json()["error"] == "not_found"
    r = couch.get(f"/{db}/_changes", params={"filter": "noslash"})
    assert r.status_code == 400
    assert r.json()["error"] == "bad_request"


def test_local_docs_not_in_changes(couch, db):
    couch.put(f"/{db}/_local/x", json={})
    put(couch, db, "a", {})
    assert [r["id"] for r in changes(couch, db)["results"]] == ["a"]


def test_longpoll_times_out_empty(couch, db):
    put(couch, db, "a", {})
    now = changes(couch, db, since="now")["last_seq"]
    start = time.monotonic()
    r = couch.get(f"/{db}/_changes", params={"feed": "longpoll", "since": now, "timeout": 1000}, timeout=15)
    elapsed = time.monotonic() - start
    assert r.status_code == 200
    assert r.json()["results"] == []
    assert 0.5 <= elapsed < 10


def test_longpoll_returns_existing_at_once(couch, db):
    put(couch, db, "a", {})
    start = time.monotonic()
    r = couch.get(f"/{db}/_changes", params={"feed": "longpoll", "since": 0, "timeout": 10000}, timeout=15)
    assert time.monotonic() - start < 5
    assert [row["id"] for row in r.json()["results"]] == ["a"]


def test_longpoll_wakes_on_write(couch, db):
    since = changes(couch, db, since="now")["last_seq"]
    result = {}

    def poll():
        s = requests.Session()
        s.auth = couch.session.auth
        t0 = time.monotonic()
        r = s.get(couch.url(f"/{db}/_changes"),
                  params={"feed": "longpoll", "since": since, "timeout": 20000, "heartbeat": 5000}, timeout=30)
        result["elapsed"] = time.monotonic() - t0
        result["body"] = r.json()
    t = threading.Thread(target=poll)
    t.start()
    time.sleep(0.5)
    put(couch, db, "woke", {})
    t.join(25)
    assert not t.is_alive(), "longpoll did not return after a write"
    assert [row["id"] for row in result["body"]["results"]] == ["woke"]
    assert result["elapsed"] < 5


def test_continuous_with_heartbeat(couch, db):
    # CouchDB: a heartbeat keeps a live feed open indefinitely (it overrides `timeout`,
    # couch_changes:get_changes_timeout), so read until rows and heartbeats have arrived, then hang up.
    put(couch, db, "a", {})
    put(couch, db, "b", {})
    r = couch.get(f"/{db}/_changes", params={"feed": "continuous", "since": 0, "heartbeat": 200},
                  stream=True, timeout=15)
    assert r.status_code == 200
    raw = b""
    deadline = time.monotonic() + 5
    for chunk in r.iter_content(chunk_size=None):
        raw += chunk
        if raw.count(b"\n") >= 5 or time.monotonic() > deadline:
            break
    r.close()
    lines = raw.split(b"\n")
    rows = [json.loads(line) for line in lines if line.strip()]
    assert sorted(o["id"] for o in rows) == ["a", "b"]
    assert b"\n\n" in raw, "no heartbeat newline seen with heartbeat=200"


def test_continuous_ends_at_timeout_without_heartbeat(couch, db):
    put(couch, db, "a", {})
    r = couch.get(f"/{db}/_changes", params={"feed": "continuous", "since": 0, "timeout": 300},
                  stream=True, timeout=15)
    assert r.status_code == 200
    objs = [json.loads(line) for line in r.content.split(b"\n") if line.strip()]
    assert [o["id"] for o in objs if "id" in o] == ["a"]
    assert "last_seq" in objs[-1]


def test_eventsource(couch, db):
    put(couch, db, "a", {})
    r = couch.get(f"/{db}/_changes", params={"feed": "eventsource", "since": 0, "timeout": 500},
                  headers={"Connection": "close"}, stream=True, timeout=15)  # CouchDB may send a stray chunk after it
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/event-stream")
    text = b"".join(r.iter_content(chunk_size=None)).decode()
    data = [json.loads(line[len("data: "):]) for line in text.splitlines() if line.startswith("data: ")]
    assert data and data[0]["id"] == "a"
    assert any(line.startswith("id: ") for line in text.splitlines())
