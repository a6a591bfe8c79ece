"""_changes parameters as CouchDB 3.4 reads them (chttpd_db:parse_changes_query, couch_changes,
fabric_view_changes; issue 11 items 4, 5, 15, 17): `last-event-id`, lenient flags, `seq_interval`'s rows,
and the reasons of filter errors."""

import json

import pytest

from conftest import is_couchlite
from test_documents import put

UNLIMITED = 1_000_000_000_000_000  # CouchDB's default #changes_args.limit


def changes(couch, db, **params):
    r = couch.get(f"/{db}/_changes", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def fill(couch, db, n):
    for i in range(n):
        put(couch, db, f"d{i}", {"i": i})
    return changes(couch, db)["results"]


# Item 4: EventSource reconnects.

def test_last_event_id_parameter_means_since(couch, db):
    rows = fill(couch, db, 3)
    after = changes(couch, db, **{"last-event-id": rows[0]["seq"]})
    assert sorted(row["id"] for row in after["results"]) == sorted(row["id"] for row in rows[1:])


def test_later_of_since_and_last_event_id_wins(couch, db):
    rows = fill(couch, db, 3)
    r = couch.get(f"/{db}/_changes?since=0&last-event-id={rows[1]['seq']}")
    assert [row["id"] for row in r.json()["results"]] == [rows[2]["id"]]
    r = couch.get(f"/{db}/_changes?last-event-id={rows[1]['seq']}&since=0")
    assert len(r.json()["results"]) == 3


@pytest.mark.parametrize("quoted", [False, True])
def test_last_event_id_header_resumes_an_eventsource_feed(couch, db, quoted):
    rows = fill(couch, db, 3)
    seq = rows[0]["seq"]
    # A browser sends back the `id:` line as it came: CouchDB's is the JSON-encoded seq.
    header = json.dumps(seq) if quoted else seq
    r = couch.get(f"/{db}/_changes", params={"feed": "eventsource", "since": 0, "timeout": 300},
                  headers={"Last-Event-ID": header, "Connection": "close"})
    assert r.status_code == 200
    data = [json.loads(line[len("data: "):]) for line in r.text.splitlines() if line.startswith("data: ")]
    assert sorted(row["id"] for row in data) == sorted(row["id"] for row in rows[1:])
    ids = [json.loads(line[len("id: "):]) for line in r.text.splitlines() if line.startswith("id: ")]
    assert ids == [row["seq"] for row in data]


def test_last_event_id_header_is_ignored_by_other_feeds(couch, db):
    rows = fill(couch, db, 2)
    r = couch.get(f"/{db}/_changes", headers={"Last-Event-ID": rows[0]["seq"]})
    assert len(r.json()["results"]) == 2


# Item 5: a flag turns on only for exactly `true`; names are case-insensitive.

@pytest.mark.parametrize("value", ["True", "TRUE", "1", "yes", "on", ""])
def test_flags_other_than_exactly_true_are_ignored(couch, ordered_db, value):
    db = ordered_db
    ascending = [row["id"] for row in fill(couch, db, 2)]
    for name in ("include_docs", "conflicts", "attachments", "att_encoding_info"):
        r = couch.get(f"/{db}/_changes", params={name: value})
        assert r.status_code == 200, f"{name}={value}: {r.text}"
        assert all("doc" not in row for row in r.json()["results"])
    rows = changes(couch, db, descending=value)["results"]
    assert [row["id"] for row in rows] == ascending


def test_flags_turn_on_for_true(couch, ordered_db):
    db = ordered_db
    ascending = [row["id"] for row in fill(couch, db, 2)]
    rows = changes(couch, db, include_docs="true", descending="true")["results"]
    assert [row["doc"]["_id"] for row in rows] == ascending[::-1]


def test_parameter_names_are_case_insensitive(couch, db):
    fill(couch, db, 2)
    rows = couch.get(f"/{db}/_changes?Include_Docs=true&LIMIT=1").json()["results"]
    assert len(rows) == 1 and rows[0]["doc"]["_id"] == rows[0]["id"]


# Item 15: which rows carry `seq` under `seq_interval`.

def carries(n_rows, interval, limit=None):
    """CouchDB's rule: a row carries its seq when the limit still to go is a multiple of the interval."""
    start = UNLIMITED if limit is None else limit
    rows = n_rows if start < 0 else min(n_rows, start)  # a negative limit never runs out
    # Erlang's `rem` truncates like C; Python's % floors, which agrees on whether the remainder is zero.
    return [(start - k) % interval == 0 for k in range(rows)]


@pytest.mark.parametrize("interval,limit", [(3, None), (2, None), (4, None), (7, None), (3, 6), (3, 5), (2, 7),
                                            (1, None), (10, None), (3, -1), (4, -2)])
def test_seq_interval_rows_follow_couchdbs_countdown(couch, db, interval, limit):
    fill(couch, db, 8)
    params = {"seq_interval": interval}
    if limit is not None:
        params["limit"] = limit
    body = changes(couch, db, **params)
    got = [row["seq"] is not None for row in body["results"]]
    assert got == carries(8, interval, limit)
    assert isinstance(body["last_seq"], str)


def test_a_carried_seq_resumes_after_its_row(couch, db):
    fill(couch, db, 8)
    rows = changes(couch, db, seq_interval=3)["results"]
    for k, row in enumerate(rows):
        if row["seq"] is None:
            continue
        rest = changes(couch, db, since=row["seq"])["results"]
        assert sorted(r["id"] for r in rest) == sorted(r["id"] for r in rows[k + 1:])


def test_seq_interval_on_a_continuous_feed(couch, db):
    fill(couch, db, 5)
    r = couch.get(f"/{db}/_changes", params={"feed": "continuous", "seq_interval": 2, "timeout": 200},
                  headers={"Connection": "close"})
    lines = [json.loads(line) for line in r.content.split(b"\n") if line.strip()]
    assert [line["seq"] is not None for line in lines if "id" in line] == carries(5, 2)
    assert isinstance(lines[-1]["last_seq"], str)


@pytest.mark.parametrize("value", ["0", "-1", "x"])
def test_bad_seq_interval_is_400(couch, db, value):
    r = couch.get(f"/{db}/_changes", params={"seq_interval": value})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "invalid_seq_interval"}


# Item 17: the reasons clients match on.

@pytest.mark.parametrize("body", [{"selector": "kind"}, {"selector": ["a"]}, {}])
def test_selector_that_is_not_an_object(couch, db, body):
    r = couch.post(f"/{db}/_changes", params={"filter": "_selector"}, json=body)
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "Selector error: expected a JSON object"}


def test_selector_filter_needs_a_post(couch, db):
    r = couch.get(f"/{db}/_changes", params={"filter": "_selector"})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "Selector must be specified in POST payload"}


def test_filter_of_a_missing_design_document(couch, db):
    r = couch.get(f"/{db}/_changes", params={"filter": "nosuch/f"})
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "missing"}


def test_filter_missing_from_an_existing_design_document(couch, db):
    put(couch, db, "_design/app", {"filters": {"other": "function(doc, req) { return true; }"}})
    r = couch.get(f"/{db}/_changes", params={"filter": "app/f"})
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "missing json key: f"}


def test_filter_of_a_design_document_without_filters(couch, db):
    put(couch, db, "_design/plain", {"views": {}})
    r = couch.get(f"/{db}/_changes", params={"filter": "plain/f"})
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "missing json key: filters"}


def test_existing_filter_function_runs(couch, db):
    put(couch, db, "_design/app", {"filters": {"all": "function(doc, req) { return true; }"}})
    r = couch.get(f"/{db}/_changes", params={"filter": "app/all"})
    assert r.status_code == 200
    assert [row["id"] for row in r.json()["results"]] == ["_design/app"]


def test_unknown_builtin_filter(couch, db):
    r = couch.get(f"/{db}/_changes", params={"filter": "_nosuch"})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "unknown builtin filter name"}


def test_doc_ids_that_are_not_strings(couch, db):
    r = couch.post(f"/{db}/_changes", params={"filter": "_doc_ids"}, json={"doc_ids": ["a", 1]})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "`doc_ids` filter parameter is not a list of doc ids."}


def test_limit_zero_sends_no_rows_and_counts_them_pending(couch, db):
    fill(couch, db, 3)
    body = changes(couch, db, limit=0)
    assert body["results"] == [] and body["pending"] == 3


def test_a_negative_limit_is_no_limit(couch, db):
    fill(couch, db, 3)
    assert len(changes(couch, db, limit=-1)["results"]) == 3


def test_heartbeat_must_be_a_positive_integer_or_true(couch, db):
    for value, reason in [("false", "Invalid heartbeat value. Expecting a positive integer value (in milliseconds)."),
                          ("x", "Invalid heartbeat value. Expecting a positive integer value (in milliseconds)."),
                          ("0", "The heartbeat value should be a positive integer (in milliseconds).")]:
        r = couch.get(f"/{db}/_changes", params={"heartbeat": value})
        assert r.status_code == 400
        assert r.json() == {"error": "bad_request", "reason": reason}


def test_post_needs_a_json_body(couch, db):
    r = couch.post(f"/{db}/_changes", params={"filter": "_doc_ids"}, data=b'{"doc_ids":["a"]}',
                   headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    assert r.json()["error"] == "bad_content_type"
