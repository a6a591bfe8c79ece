"""GET /_db_updates: databases created, updated and deleted, as a feed (server admins only).

CouchDB writes its global changes a little after the event, and other clients' databases come and go on a shared
server, so the tests look for their own database's events and wait for them."""

import json
import re
import time

import requests

from conftest import is_couchlite, unique_db_name

SEQ = re.compile(r"^\d+-")


def events_of(couch, name, **params):
    body = couch.get("/_db_updates", params=params).json()
    return [(row["type"], row["db_name"]) for row in body["results"] if row["db_name"] == name]


def wait_for_event(couch, name, kind, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while (kind, name) not in events_of(couch, name):
        assert time.monotonic() < deadline, f"no {kind} event for {name}"
        time.sleep(0.2)


def test_created_updated_and_deleted_events(couch):
    name = unique_db_name("dbup")
    assert couch.put(f"/{name}").status_code == 201
    wait_for_event(couch, name, "created")
    couch.put(f"/{name}/doc", json={})
    wait_for_event(couch, name, "updated")
    assert couch.delete(f"/{name}").status_code == 200
    wait_for_event(couch, name, "deleted")


def test_normal_feed_shape_limit_and_descending(couch, db):
    wait_for_event(couch, db, "created")
    r = couch.get("/_db_updates")
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"results", "last_seq"} and SEQ.match(body["last_seq"])
    for row in body["results"]:
        assert set(row) == {"db_name", "type", "seq"} and row["type"] in ("created", "updated", "deleted")
        assert SEQ.match(row["seq"])
    one = couch.get("/_db_updates", params={"limit": "1"}).json()
    assert len(one["results"]) == 1 and one["last_seq"] == one["results"][0]["seq"]
    newest = couch.get("/_db_updates", params={"descending": "true", "limit": "2"}).json()["results"]
    numbers = [int(row["seq"].split("-")[0]) for row in newest]
    assert len(numbers) == 2 and numbers[0] > numbers[1]
    since = body["results"][-1]["seq"]
    later = couch.get("/_db_updates", params={"since": since}).json()["results"]
    assert all(int(row["seq"].split("-")[0]) > int(since.split("-")[0]) for row in later)
    assert couch.get("/_db_updates", params={"limit": "0"}).json()["results"] == []


def test_longpoll_wakes_for_a_new_database(couch):
    last = couch.get("/_db_updates", params={"since": "now", "timeout": "100"}).json()["last_seq"]
    name = unique_db_name("dbup")
    started = time.monotonic()
    import threading
    threading.Timer(0.5, lambda: couch.put(f"/{name}")).start()
    try:
        deadline = time.monotonic() + 30
        seen = []
        while name not in seen and time.monotonic() < deadline:
            body = couch.get("/_db_updates", params={"feed": "longpoll", "since": last, "timeout": "10000"}).json()
            seen += [row["db_name"] for row in body["results"]]
            last = body["last_seq"]
        assert name in seen
        assert time.monotonic() - started < 30
    finally:
        time.sleep(0.6)
        couch.delete(f"/{name}")


def test_continuous_feed_ends_at_its_timeout_with_last_seq(couch):
    r = couch.get("/_db_updates", params={"feed": "continuous", "since": "now", "timeout": "500"})
    assert r.status_code == 200
    lines = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert "last_seq" in lines[-1] and SEQ.match(lines[-1]["last_seq"])
    assert all(set(line) == {"db_name", "type", "seq"} for line in lines[:-1])
    r = couch.get("/_db_updates", params={"feed": "continuous", "since": "0", "limit": "1"})
    lines = [json.loads(line) for line in r.text.splitlines() if line.strip()]
    assert len(lines) == 2 and lines[1]["last_seq"] == lines[0]["seq"]


def test_refused_parameters(couch):
    r = couch.get("/_db_updates", params={"feed": "bogus"})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request",
                        "reason": "Supported `feed` types: normal, continuous, longpoll, eventsource"}
    for param in ("heartbeat", "limit"):
        r = couch.get("/_db_updates", params={param: "abc"})
        assert r.status_code == 400 and r.json() == {"error": "bad_request", "reason": "invalid_integer"}, param
    r = couch.get("/_db_updates", params={"since": "garbage"})
    assert r.status_code == 400
    assert r.json()["reason"] == "Malformed sequence supplied in 'since' parameter."
    r = couch.post("/_db_updates", json={})
    assert r.status_code == 405 and r.json()["reason"] == "Only GET allowed"


def test_hostile_since_values_are_malformed(couch):
    """Negative, past any integer, garbage, empty: CouchDB's 400, and nothing is read."""
    for since in ("-1", "-5-abc", "99999999999999999999", "99999999999999999999-abc", "abc", "", "1e3"):
        r = couch.get("/_db_updates", params={"since": since})
        assert r.status_code == 400, since
        assert r.json() == {"error": "bad_request", "reason": "Malformed sequence supplied in 'since' parameter."}


def test_since_a_saved_seq_sees_what_came_later(couch):
    """A client saves `last_seq` (`since=now`), then a database of its own is created, written and deleted:
    reading from the saved seq shows each of the three, with seqs after it, and nothing of its own from before."""
    now = couch.get("/_db_updates", params={"since": "now"}).json()
    assert SEQ.match(now["last_seq"])
    saved = now["last_seq"]
    name = unique_db_name("dbup")
    assert couch.put(f"/{name}").status_code == 201
    couch.put(f"/{name}/doc", json={})
    assert couch.delete(f"/{name}").status_code == 200
    deadline = time.monotonic() + 20
    while True:
        body = couch.get("/_db_updates", params={"since": saved}).json()
        rows = [row for row in body["results"] if row["db_name"] == name]
        if {row["type"] for row in rows} == {"created", "updated", "deleted"}:
            break
        assert time.monotonic() < deadline, rows
        time.sleep(0.2)
    assert len(rows) == 3
    assert all(SEQ.match(row["seq"]) and int(row["seq"].split("-")[0]) > int(saved.split("-")[0]) for row in rows)
    assert int(body["last_seq"].split("-")[0]) >= max(int(row["seq"].split("-")[0]) for row in rows)


def test_non_admin_reading_db_updates_is_refused(couch):
    r = requests.get(couch.url("/_db_updates"), timeout=10)
    assert r.status_code == 401 and r.json()["error"] == "unauthorized"


def test_couchlite_eventsource_events(couch, db):
    if not is_couchlite(couch):
        import pytest
        pytest.skip("CouchDB's eventsource rows are raw global-changes rows (couchlite-only shape)")
    r = couch.get("/_db_updates", params={"feed": "eventsource", "since": "0", "limit": "1"})
    assert r.headers["Content-Type"].startswith("text/event-stream")
    event = r.text.split("\n\n")[0].splitlines()
    assert event[0].startswith("data: ") and event[1].startswith("id: ")
    row = json.loads(event[0][len("data: "):])
    assert json.loads(event[1][len("id: "):]) == row["seq"]
