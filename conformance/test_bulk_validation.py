"""_bulk_docs checks every document before it writes any (chttpd_db, couch_db, fabric_doc_update; issue 11 items
7, 12, 18): a bad document fails the whole request and nothing is stored; only conflicts (and forbidden writes)
are per-document items, and they carry no `rev`; `all_or_nothing` is refused with 417."""

import pytest

from test_documents import put
from test_sequences import number

H = "1" * 32


@pytest.fixture
def db(ordered_db):
    """A one-shard database (`q=1`): a CouchDB cluster checks a request per shard, and only within one shard is
    a refused request guaranteed to write none of its documents."""
    return ordered_db


def post(couch, db, body):
    return couch.post(f"/{db}/_bulk_docs", json=body)


def stored(couch, db, doc_id):
    return couch.get(f"/{db}/{doc_id}").status_code == 200


def update_seq(couch, db):
    return number(couch.get(f"/{db}").json()["update_seq"])


def assert_nothing_written(couch, db, before_seq):
    assert update_seq(couch, db) == before_seq
    assert not stored(couch, db, "good")


@pytest.mark.parametrize("new_edits", [True, False])
def test_an_illegal_id_fails_the_request(couch, db, new_edits):
    before = update_seq(couch, db)
    good = {"_id": "good", "_rev": f"1-{H}"} if not new_edits else {"_id": "good"}
    bad = {"_id": "_invalid", "_rev": f"1-{H}"} if not new_edits else {"_id": "_invalid"}
    r = post(couch, db, {"docs": [good, bad], "new_edits": new_edits})
    assert r.status_code == 400
    assert r.json() == {"error": "illegal_docid", "reason": "Only reserved document ids may start with underscore."}
    assert_nothing_written(couch, db, before)


def test_a_replicated_document_without_a_rev_fails_the_request(couch, db):
    before = update_seq(couch, db)
    r = post(couch, db, {"docs": [{"_id": "good", "_rev": f"1-{H}"}, {"_id": "norev", "v": 1}],
                         "new_edits": False})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request",
                        "reason": "When `new_edits: false`, the document needs `_rev` or `_revisions` specified"}
    assert_nothing_written(couch, db, before)
    assert not stored(couch, db, "norev")


@pytest.mark.parametrize("new_edits", [True, False])
def test_a_stub_naming_no_stored_attachment_fails_the_request(couch, db, new_edits):
    before = update_seq(couch, db)
    stub = {"_attachments": {"a.txt": {"stub": True, "content_type": "text/plain", "length": 3, "revpos": 1,
                                       "digest": "md5-rL0Y20zC+Fzt72VPzMSk2A=="}}}
    docs = [{"_id": "good"}, {"_id": "stubby", **stub}]
    if not new_edits:
        docs = [{**doc, "_rev": f"1-{H}"} for doc in docs]
    r = post(couch, db, {"docs": docs, "new_edits": new_edits})
    assert r.status_code == 412
    assert r.json() == {"error": "missing_stub", "reason": "Invalid attachment stub in stubby for a.txt"}
    assert_nothing_written(couch, db, before)
    assert not stored(couch, db, "stubby")


def test_a_bad_attachment_name_fails_the_request(couch, db):
    r = post(couch, db, {"docs": [{"_id": "good"}, {"_id": "x", "_attachments": {
        "_bad": {"content_type": "text/plain", "data": "aGk="}}}]})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "Attachment name '_bad' starts with prohibited character '_'"}
    assert not stored(couch, db, "good")


def test_new_edits_must_be_a_boolean(couch, db):
    # (With documents CouchDB fails earlier, with a 500, in its per-document rev check.)
    r = post(couch, db, {"docs": [], "new_edits": "false"})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "`new_edits` parameter must be a boolean."}


def test_conflicts_stay_items_without_a_rev(couch, db):
    rev1 = put(couch, db, "a", {"v": 1})
    put(couch, db, "a", {"v": 2}, rev=rev1)
    r = post(couch, db, {"docs": [{"_id": "a", "_rev": rev1, "v": 3}, {"_id": "fresh"}]})
    assert r.status_code == 201
    rows = r.json()
    assert rows[0] == {"id": "a", "error": "conflict", "reason": "Document update conflict."}
    assert rows[1]["ok"] is True and rows[1]["id"] == "fresh"
    assert stored(couch, db, "fresh")


def test_all_or_nothing_is_417_and_writes_nothing(couch, db):
    before = update_seq(couch, db)
    r = post(couch, db, {"all_or_nothing": True, "docs": [{"_id": "good"}, {"_id": "other", "_rev": f"1-{H}"}]})
    assert r.status_code == 417
    assert r.json() == [
        {"id": "good", "rev": "0-", "error": "not_implemented", "reason": "all_or_nothing is not supported"},
        {"id": "other", "rev": f"1-{H}", "error": "not_implemented", "reason": "all_or_nothing is not supported"},
    ]
    assert_nothing_written(couch, db, before)


def test_all_or_nothing_false_is_an_ordinary_batch(couch, db):
    r = post(couch, db, {"all_or_nothing": False, "docs": [{"_id": "good"}]})
    assert r.status_code == 201 and r.json()[0]["ok"] is True
