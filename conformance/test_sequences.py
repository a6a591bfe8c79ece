"""Update sequences in CouchDB 3's shape (issue 11 item 13): every sequence a server sends — `_changes` `seq`
and `last_seq`, `update_seq` of `GET /db` and of `_all_docs?update_seq=true`, `purge_seq` — is a string
`N-<opaque>` whose leading number clients read (PouchDB's tests, client libraries), and every form a client may
hand back in `since` works: `N-…` as sent or in JSON quotes, `now`, `0`; a bare `N` (and `"N"`) is a couchlite
leniency (CouchDB 3 cannot decode it and answers 400)."""

import json
import re

import pytest

from conftest import is_couchlite
from test_documents import put

SEQ = re.compile(r"^([0-9]+)-\S+$")


def number(seq) -> int:
    assert isinstance(seq, str), f"sequence {seq!r} is not a string"
    match = SEQ.fullmatch(seq)
    assert match, f"sequence {seq!r} is not N-<opaque>"
    return int(match.group(1))


def changes(couch, db, **params):
    r = couch.get(f"/{db}/_changes", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def test_every_sequence_is_an_n_dash_opaque_string(couch, db):
    info = couch.get(f"/{db}").json()
    assert number(info["update_seq"]) == 0
    assert number(info["purge_seq"]) == 0
    for i in range(3):
        put(couch, db, f"d{i}", {"i": i})
    info = couch.get(f"/{db}").json()
    assert number(info["update_seq"]) == 3
    body = changes(couch, db)
    assert [number(row["seq"]) for row in body["results"]] == [1, 2, 3]
    assert number(body["last_seq"]) == 3
    all_docs = couch.get(f"/{db}/_all_docs", params={"update_seq": "true"}).json()
    assert number(all_docs["update_seq"]) == 3


def test_leading_number_grows_with_each_update(couch, db):
    rev = put(couch, db, "a", {})
    first = number(couch.get(f"/{db}").json()["update_seq"])
    put(couch, db, "a", {"v": 2}, rev=rev)
    put(couch, db, "b", {})
    assert number(couch.get(f"/{db}").json()["update_seq"]) == first + 2


def test_continuous_and_eventsource_rows_carry_the_same_shape(couch, db):
    put(couch, db, "a", {})
    r = couch.get(f"/{db}/_changes", params={"feed": "continuous", "since": 0, "timeout": 200},
                  headers={"Connection": "close"})
    lines = [json.loads(line) for line in r.content.split(b"\n") if line.strip()]
    assert number(lines[0]["seq"]) == 1 and number(lines[-1]["last_seq"]) == 1
    r = couch.get(f"/{db}/_changes", params={"feed": "eventsource", "since": 0, "timeout": 200},
                  headers={"Connection": "close"})
    ids = [line[len("id: "):] for line in r.text.splitlines() if line.startswith("id: ")]
    # CouchDB sends the row's seq JSON-encoded, quotes included.
    assert number(json.loads(ids[0])) == 1


@pytest.mark.parametrize("form", ["as sent", "quoted"])
def test_since_takes_a_sequence_as_sent_or_json_quoted(couch, db, form):
    for i in range(3):
        put(couch, db, f"d{i}", {})
    rows = changes(couch, db)["results"]
    first = rows[0]["seq"]
    since = first if form == "as sent" else json.dumps(first)
    # The rows after the first, whichever it was (a CouchDB cluster interleaves its shards).
    after = sorted(row["id"] for row in changes(couch, db, since=since)["results"])
    assert after == sorted(row["id"] for row in rows[1:])


def test_since_zero_and_now(couch, db):
    put(couch, db, "a", {})
    assert [row["id"] for row in changes(couch, db, since=0)["results"]] == ["a"]
    if is_couchlite(couch):  # the same leniency for a quoted bare number
        assert [row["id"] for row in changes(couch, db, since='"0"')["results"]] == ["a"]
    else:
        assert couch.get(f"/{db}/_changes", params={"since": '"0"'}).status_code == 400
    now = changes(couch, db, since="now")
    assert now["results"] == [] and number(now["last_seq"]) == 1


@pytest.mark.parametrize("form", ["N", '"N"'])
def test_since_takes_a_bare_number_on_couchlite(couch, ordered_db, form):
    db = ordered_db
    for i in range(3):
        put(couch, db, f"d{i}", {})
    since = form.replace("N", "1")
    if is_couchlite(couch):
        # A deliberate leniency: clients and PouchDB's tests hand back the leading number they read.
        assert [row["id"] for row in changes(couch, db, since=since)["results"]] == ["d1", "d2"]
    else:
        # CouchDB 3 decodes only the opaque part and cannot decode a bare number other than 0.
        r = couch.get(f"/{db}/_changes", params={"since": since})
        assert r.status_code == 400
        assert r.json() == {"error": "bad_request", "reason": "Malformed sequence supplied in 'since' parameter."}


@pytest.mark.parametrize("since", ["abc", "-1", "x-1"])
def test_malformed_since_is_400(couch, db, since):
    r = couch.get(f"/{db}/_changes", params={"since": since})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "Malformed sequence supplied in 'since' parameter."}
