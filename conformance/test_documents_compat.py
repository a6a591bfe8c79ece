"""Document behaviour real CouchDB clients rely on (issue 11 items 1, 2, 3, 5, 6, 8, 14, 16, 19, 20).

Each test states what CouchDB 3.4.3 does (chttpd_db.erl, couch_doc.erl, couch_db.erl) and must pass against it.
"""

import base64
import json
import time
import uuid

import pytest

H32 = 32  # a 32-character rev hash is hex and is 16 raw bytes to CouchDB


def hexid(ch: str) -> str:
    return ch * H32


def replicate(couch, db, doc_id, rev, **fields):
    """Writes one revision with new_edits=false (PUT), `rev` as `_rev`; extra fields go in the body."""
    body = {"_rev": rev, **fields}
    r = couch.put(f"/{db}/{doc_id}", params={"new_edits": "false"}, json=body)
    assert r.status_code == 201, r.text
    return r


def put(couch, db, doc_id, body, **params):
    r = couch.put(f"/{db}/{doc_id}", json=body, params=params)
    assert r.status_code == 201, f"PUT {doc_id}: {r.status_code} {r.text}"
    return r.json()["rev"]


def wait_for_doc(couch, db, doc_id, timeout_s=10.0):
    """batch=ok writes land later in CouchDB; poll until the document is readable."""
    deadline = time.monotonic() + timeout_s
    while True:
        r = couch.get(f"/{db}/{doc_id}")
        if r.status_code == 200 or time.monotonic() > deadline:
            return r
        time.sleep(0.1)


# --- 1. The URL names the document -------------------------------------------------------------

def test_put_body_id_different_from_url_is_stored_under_url_id(couch, db):
    r = couch.put(f"/{db}/url-id", json={"_id": "body-id", "v": 1})
    assert r.status_code == 201, r.text
    assert r.json()["id"] == "url-id"
    assert couch.get(f"/{db}/url-id").json()["_id"] == "url-id"
    assert couch.get(f"/{db}/body-id").status_code == 404


def test_put_design_doc_body_id_different_from_url(couch, db):
    r = couch.put(f"/{db}/_design/x", json={"_id": "_design/y", "views": {}})
    assert r.status_code == 201, r.text
    assert r.json()["id"] == "_design/x"
    assert couch.get(f"/{db}/_design/x").status_code == 200
    assert couch.get(f"/{db}/_design/y").status_code == 404


def test_put_user_doc_body_id_different_from_url(couch):
    name = f"idcheck{uuid.uuid4().hex[:10]}"
    doc_id = f"org.couchdb.user:{name}"
    r = couch.put(f"/_users/{doc_id}", json={"_id": "org.couchdb.user:someone-else", "name": name,
                                             "password": "pw", "type": "user", "roles": []})
    try:
        assert r.status_code == 201, r.text
        assert r.json()["id"] == doc_id
    finally:
        got = couch.get(f"/_users/{doc_id}")
        if got.status_code == 200:
            couch.delete(f"/_users/{doc_id}", params={"rev": got.json()["_rev"]})


def test_put_body_id_must_still_be_a_valid_id(couch, db):
    r = couch.put(f"/{db}/fine", json={"_id": "_not_reserved"})
    assert r.status_code == 400
    assert r.json() == {"error": "illegal_docid", "reason": "Only reserved document ids may start with underscore."}


# --- 2. COPY ------------------------------------------------------------------------------------

def copy(couch, db, source, destination=None, **kw):
    headers = dict(kw.pop("headers", {}))
    if destination is not None:
        headers["Destination"] = destination
    return couch.request("COPY", f"/{db}/{source}", headers=headers, **kw)


def test_copy_to_new_document(couch, db):
    put(couch, db, "src", {"v": 1, "nested": {"a": [1, 2]}})
    r = copy(couch, db, "src", "dst")
    assert r.status_code == 201, r.text
    body = r.json()
    assert set(body) == {"ok", "id", "rev"} and body["ok"] is True and body["id"] == "dst"
    assert body["rev"].startswith("1-")
    assert r.headers["ETag"] == f'"{body["rev"]}"'
    assert r.headers["Location"].endswith(f"/{db}/dst")
    doc = couch.get(f"/{db}/dst").json()
    assert doc == {"_id": "dst", "_rev": body["rev"], "v": 1, "nested": {"a": [1, 2]}}


def test_copy_onto_existing_document_needs_its_rev(couch, db):
    put(couch, db, "src", {"v": "source"})
    dst_rev = put(couch, db, "dst", {"v": "old"})
    r = copy(couch, db, "src", "dst")
    assert r.status_code == 409
    assert r.json() == {"error": "conflict", "reason": "Document update conflict."}
    r = copy(couch, db, "src", f"dst?rev={dst_rev}")
    assert r.status_code == 201, r.text
    assert r.json()["rev"].startswith("2-")
    doc = couch.get(f"/{db}/dst").json()
    assert doc["v"] == "source" and doc["_rev"] == r.json()["rev"]


def test_copy_of_a_named_source_revision(couch, db):
    rev1 = put(couch, db, "src", {"v": 1})
    put(couch, db, "src", {"_rev": rev1, "v": 2})
    r = copy(couch, db, "src", "dst", params={"rev": rev1})
    assert r.status_code == 201, r.text
    assert couch.get(f"/{db}/dst").json()["v"] == 1


def test_copy_of_missing_source_is_404(couch, db):
    r = copy(couch, db, "nothing-here", "dst")
    assert r.status_code == 404
    assert r.json() == {"error": "not_found", "reason": "missing"}
    assert couch.get(f"/{db}/dst").status_code == 404


def test_copy_without_destination_is_400(couch, db):
    put(couch, db, "src", {})
    r = copy(couch, db, "src")
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "Destination header is mandatory for COPY."}


def test_copy_copies_attachments(couch, db):
    data = bytes(range(256)) * 8
    r = couch.put(f"/{db}/src", json={"v": 1, "_attachments": {
        "a.bin": {"content_type": "application/octet-stream", "data": base64.b64encode(data).decode()}}})
    assert r.status_code == 201, r.text
    r = copy(couch, db, "src", "dst")
    assert r.status_code == 201, r.text
    doc = couch.get(f"/{db}/dst").json()
    assert set(doc["_attachments"]) == {"a.bin"}
    assert doc["_attachments"]["a.bin"]["length"] == len(data)
    got = couch.get(f"/{db}/dst/a.bin")
    assert got.status_code == 200 and got.content == data


# --- 3. batch=ok --------------------------------------------------------------------------------

def test_put_batch_ok_is_202_without_rev(couch, db):
    r = couch.put(f"/{db}/b", params={"batch": "ok"}, json={"v": 1})
    assert r.status_code == 202, r.text
    assert r.json() == {"ok": True, "id": "b"}
    r = wait_for_doc(couch, db, "b")
    assert r.status_code == 200 and r.json()["v"] == 1


def test_put_batch_ok_conflict_is_still_202_and_writes_nothing(couch, db):
    # CouchDB writes batch=ok documents after answering: a conflict is only logged.
    rev = put(couch, db, "b", {"v": 1})
    r = couch.put(f"/{db}/b", params={"batch": "ok"}, json={"v": 2})
    assert r.status_code == 202, r.text
    assert r.json() == {"ok": True, "id": "b"}
    time.sleep(0.5)
    doc = couch.get(f"/{db}/b").json()
    assert doc["_rev"] == rev and doc["v"] == 1


def test_post_batch_ok_is_202_without_rev(couch, db):
    r = couch.post(f"/{db}", params={"batch": "ok"}, json={"_id": "p", "v": 2})
    assert r.status_code == 202, r.text
    assert r.json() == {"ok": True, "id": "p"}
    r = couch.post(f"/{db}", params={"batch": "ok"}, json={"v": 3})
    assert r.status_code == 202, r.text
    body = r.json()
    assert set(body) == {"ok", "id"} and body["ok"] is True
    assert wait_for_doc(couch, db, "p").json()["v"] == 2
    assert wait_for_doc(couch, db, body["id"]).json()["v"] == 3


# --- 5. Document GET options are on only for exactly `true` ----------------------------------

OPTION_KEYS = {
    "revs": "_revisions",
    "revs_info": "_revs_info",
    "conflicts": "_conflicts",
    "deleted_conflicts": "_deleted_conflicts",
    "local_seq": "_local_seq",
    "meta": "_revs_info",
}


def conflicted(couch, db):
    for rev, extra in (("2-" + hexid("b"), {}), ("2-" + hexid("a"), {}), ("2-" + hexid("c"), {"_deleted": True})):
        couch.put(f"/{db}/c", params={"new_edits": "false"},
                  json={"_rev": rev, "_revisions": {"start": 2, "ids": [rev[2:], hexid("1")]}, **extra})


@pytest.mark.parametrize("option", sorted(OPTION_KEYS))
def test_document_option_true_turns_it_on(couch, db, option):
    conflicted(couch, db)
    doc = couch.get(f"/{db}/c", params={option: "true"}).json()
    assert OPTION_KEYS[option] in doc


@pytest.mark.parametrize("value", ["True", "TRUE", "1", "yes", "on", "false", ""])
@pytest.mark.parametrize("option", sorted(OPTION_KEYS))
def test_document_option_other_values_are_ignored(couch, db, option, value):
    conflicted(couch, db)
    r = couch.get(f"/{db}/c", params={option: value})
    assert r.status_code == 200, r.text
    assert r.json() == couch.get(f"/{db}/c").json()


def test_attachments_option_other_values_leave_stubs(couch, db):
    r = couch.put(f"/{db}/a", json={"_attachments": {"t.txt": {"content_type": "text/plain", "data": "aGk="}}})
    assert r.status_code == 201
    for value in ("True", "1", "yes"):
        att = couch.get(f"/{db}/a", params={"attachments": value}).json()["_attachments"]["t.txt"]
        assert att.get("stub") is True and "data" not in att
    att = couch.get(f"/{db}/a", params={"attachments": "true"}).json()["_attachments"]["t.txt"]
    assert att["data"] == "aGk="


def test_deleted_true_reads_a_deleted_document(couch, db):
    rev1 = put(couch, db, "gone", {"v": 1})
    rev2 = couch.delete(f"/{db}/gone", params={"rev": rev1}).json()["rev"]
    r = couch.get(f"/{db}/gone", params={"deleted": "true"})
    assert r.status_code == 200
    assert r.json() == {"_id": "gone", "_rev": rev2, "_deleted": True}
    for value in ("True", "1"):
        r = couch.get(f"/{db}/gone", params={"deleted": value})
        assert r.status_code == 404 and r.json() == {"error": "not_found", "reason": "deleted"}


def test_open_revs_latest_other_values_are_ignored(couch, db):
    rev1 = put(couch, db, "d", {"v": 1})
    rev2 = put(couch, db, "d", {"_rev": rev1, "v": 2})
    for value, expected in (("True", rev1), ("1", rev1), ("true", rev2)):
        r = couch.get(f"/{db}/d", params={"open_revs": json.dumps([rev1]), "latest": value})
        assert r.status_code == 200, r.text
        assert [i["ok"]["_rev"] for i in r.json()] == [expected]


def test_new_edits_other_values_mean_an_interactive_edit(couch, db):
    r = couch.put(f"/{db}/n", params={"new_edits": "False"}, json={"v": 1})
    assert r.status_code == 201, r.text
    assert r.json()["rev"].startswith("1-")


# --- 6. Revision order: 32-hex hashes are 16 bytes, other hashes are text -----------------------

def test_hex_hash_beats_text_hash_by_bytes_not_by_string(couch, db):
    # As strings "zz" > "ffff…"; as CouchDB's binaries 0xff… > "zz".
    replicate(couch, db, "w", "2-zz", _revisions={"start": 2, "ids": ["zz", "root"]}, v="zz")
    replicate(couch, db, "w", "2-" + hexid("f"), _revisions={"start": 2, "ids": [hexid("f"), "root"]}, v="ff")
    doc = couch.get(f"/{db}/w", params={"conflicts": "true"}).json()
    assert doc["_rev"] == "2-" + hexid("f") and doc["v"] == "ff"
    assert doc["_conflicts"] == ["2-zz"]


def test_conflicts_order_over_hex_upper_hex_and_text_ids(couch, db):
    leaves = ["2-" + hexid("f"), "2-zz", "2-" + hexid("A"), "2-b", "2-61" + "0" * 30]
    for rev in leaves:
        replicate(couch, db, "m", rev, _revisions={"start": 2, "ids": [rev[2:], "root"]})
    doc = couch.get(f"/{db}/m", params={"conflicts": "true"}).json()
    assert doc["_rev"] == "2-" + hexid("f")
    # Descending binary order: 0xaa… > "zz" (0x7a7a) > "b" (0x62) > 0x6100….
    assert doc["_conflicts"] == ["2-" + hexid("a"), "2-zz", "2-b", "2-61" + "0" * 30]
    r = couch.get(f"/{db}/m", params={"open_revs": "all"})
    assert sorted(i["ok"]["_rev"] for i in r.json()) == sorted(
        ["2-" + hexid("f"), "2-zz", "2-" + hexid("a"), "2-b", "2-61" + "0" * 30])


def test_upper_case_hex_rev_is_lower_cased(couch, db):
    upper = "1-" + "ABCDEF0123456789" * 2
    lower = upper.lower()
    r = replicate(couch, db, "u", upper, v=1)
    assert r.json()["rev"] == lower
    assert couch.get(f"/{db}/u").json()["_rev"] == lower
    r = couch.get(f"/{db}/u", params={"rev": upper})
    assert r.status_code == 200 and r.json()["_rev"] == lower


def test_sixteen_byte_rev_id_comes_back_as_hex(couch, db):
    # A 16-byte binary is written as 32 hex digits (couch_doc:revid_to_str), whatever it was sent as.
    r = replicate(couch, db, "s", "1-abcdefghijklmnop", v=1)
    assert r.json()["rev"] == "1-6162636465666768696a6b6c6d6e6f70"
    assert couch.get(f"/{db}/s").json()["_rev"] == "1-6162636465666768696a6b6c6d6e6f70"
    assert couch.get(f"/{db}/s", params={"rev": "1-abcdefghijklmnop"}).status_code == 200


def test_thirty_two_characters_that_are_not_hex_are_refused(couch, db):
    r = couch.put(f"/{db}/x", params={"new_edits": "false"}, json={"_rev": "1-" + "g" * 32})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "Invalid rev format"}
    r = couch.put(f"/{db}/x", params={"new_edits": "false"},
                  json={"_revisions": {"start": 1, "ids": ["g" * 32]}})
    assert r.status_code == 400
    assert r.json() == {"error": "doc_validation", "reason": "RevId isn't a valid hexadecimal"}
    r = couch.get(f"/{db}/x", params={"rev": "1-" + "g" * 32})
    assert r.status_code == 400 and r.json()["reason"] == "Invalid rev format"


# --- 8. A JSON body under another Content-Type ------------------------------------------------

@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/html", "application/xml"])
def test_put_json_body_with_other_content_type_is_accepted(couch, db, content_type):
    r = couch.request("PUT", f"/{db}/form", data=b'{"a": 1}', headers={"Content-Type": content_type})
    assert r.status_code == 201, r.text
    assert couch.get(f"/{db}/form").json()["a"] == 1


def test_put_non_json_body_with_form_content_type_is_a_clean_error(couch, db):
    r = couch.request("PUT", f"/{db}/form", data=b"a=1&b=2",
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    # CouchDB: 400 bad_request; couchlite: 415 bad_content_type (Couchbase Lite's fallback cue).
    assert r.status_code in (400, 415)
    assert r.json()["error"] in ("bad_request", "bad_content_type")
    assert couch.get(f"/{db}/form").status_code == 404


# --- 14. rev=R&latest=true ---------------------------------------------------------------------

def test_get_rev_with_latest_returns_the_newest_revision(couch, db):
    rev1 = put(couch, db, "d", {"v": 1})
    rev2 = put(couch, db, "d", {"_rev": rev1, "v": 2})
    r = couch.get(f"/{db}/d", params={"rev": rev1, "latest": "true"})
    assert r.status_code == 200
    assert r.json()["_rev"] == rev2 and r.json()["v"] == 2
    # Any other spelling of latest is ignored: the named revision itself.
    assert couch.get(f"/{db}/d", params={"rev": rev1, "latest": "True"}).json()["_rev"] == rev1


def test_get_rev_with_latest_opens_the_winner(couch, db):
    # chttpd_db: with latest=true, "couch_doc_open will open the winning rev despite of a rev passed".
    conflicted(couch, db)
    r = couch.get(f"/{db}/c", params={"rev": "2-" + hexid("a"), "latest": "true"})
    assert r.status_code == 200
    assert r.json()["_rev"] == "2-" + hexid("b")
    r = couch.get(f"/{db}/c", params={"rev": "not-a-rev", "latest": "true"})
    assert r.status_code == 400 and r.json() == {"error": "bad_request", "reason": "Invalid rev format"}


# --- 16. _local documents have no attachments -------------------------------------------------

@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_local_document_attachment_is_400(couch, db, method):
    assert couch.put(f"/{db}/_local/l", json={"v": 1}).status_code == 201
    r = couch.request(method, f"/{db}/_local/l/att.txt", data=b"x", headers={"Content-Type": "text/plain"})
    assert r.status_code == 400
    assert r.json() == {"error": "bad_request", "reason": "_local documents do not accept attachments."}


# --- 19. Special fields CouchDB keeps ---------------------------------------------------------

KEPT = {
    "_replication_id": "abc123",
    "_replication_state": "completed",
    "_replication_state_time": "2026-12-01T09:00:00Z",
    "_replication_state_reason": "done",
    "_replication_stats": {"docs_written": 3},
    "_access": ["alice"],
}


def test_replication_and_access_fields_are_accepted_and_kept(couch, db):
    r = couch.put(f"/{db}/rep", json={"source": "a", "target": "b", **KEPT})
    assert r.status_code == 201, r.text
    doc = couch.get(f"/{db}/rep").json()
    for key, value in KEPT.items():
        assert doc[key] == value


def test_other_special_fields_are_still_refused(couch, db):
    r = couch.put(f"/{db}/bad", json={"_replication_other": 1})
    assert r.status_code == 400
    assert r.json() == {"error": "doc_validation", "reason": "Bad special document member: _replication_other"}


# --- 20. _revisions wins over a disagreeing _rev -----------------------------------------------

def test_revisions_win_over_disagreeing_rev(couch, db):
    revisions = {"start": 3, "ids": ["ccc", "bbb", "aaa"]}
    r = couch.put(f"/{db}/r", params={"new_edits": "false"}, json={"_rev": "2-xyz", "_revisions": revisions, "v": 1})
    assert r.status_code == 201, r.text
    assert r.json()["rev"] == "3-ccc"
    # _rev after _revisions is ignored too.
    r = couch.request("PUT", f"/{db}/r2", params={"new_edits": "false"}, headers={"Content-Type": "application/json"},
                      data=json.dumps({"_revisions": revisions, "_rev": "9-zzz", "v": 2}).encode())
    assert r.status_code == 201, r.text
    for doc_id in ("r", "r2"):
        doc = couch.get(f"/{db}/{doc_id}", params={"revs": "true"}).json()
        assert doc["_rev"] == "3-ccc" and doc["_revisions"] == revisions
    assert couch.get(f"/{db}/r", params={"rev": "2-xyz"}).status_code == 404


def test_bulk_docs_revisions_win_over_disagreeing_rev(couch, db):
    docs = [{"_id": "b", "_rev": "1-nope", "_revisions": {"start": 2, "ids": ["two", "one"]}, "v": 1}]
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": docs, "new_edits": False})
    assert r.status_code == 201, r.text
    assert r.json() == []
    doc = couch.get(f"/{db}/b", params={"revs": "true"}).json()
    assert doc["_rev"] == "2-two" and doc["_revisions"] == {"start": 2, "ids": ["two", "one"]}


def test_a_plus_in_the_path_is_a_space_as_couchdb_decodes_paths(couch, db):
    """chttpd decodes each path segment with mochiweb's `unquote`, which takes `+` for a space: `/db/a+b` is the
    document `a b`, and `a+b` is written `a%2Bb` (as every client library's encoder writes it)."""
    r = couch.put(f"/{db}/a+b", json={})
    assert r.status_code == 201 and r.json()["id"] == "a b", r.text
    r = couch.put(f"/{db}/c%2Bd", json={})
    assert r.status_code == 201 and r.json()["id"] == "c+d", r.text
    assert couch.get(f"/{db}/c+d").status_code == 404
    assert couch.get(f"/{db}/c%2Bd").json()["_id"] == "c+d"
    assert couch.get(f"/{db}/a%20b").json()["_id"] == "a b"
    r = couch.put(f"/{db}/e/att+1.txt", data=b"x", headers={"Content-Type": "text/plain"})
    assert r.status_code == 201, r.text
    assert list(couch.get(f"/{db}/e").json()["_attachments"]) == ["att 1.txt"]
    assert couch.get(f"/{db}/e/att%201.txt").content == b"x"


def test_a_plus_in_a_database_name_in_the_path_is_a_space_too(couch, db):
    r = couch.put(f"/{db}+x")
    assert r.status_code == 400 and r.json()["error"] == "illegal_database_name", r.text
    assert f"'{db} x'" in r.json()["reason"]


def test_if_none_match_may_list_several_tags_weak_or_not(couch, db):
    """`chttpd:etag_match` splits If-None-Match at commas and spaces and ignores `W/`: a document's or an
    attachment's ETag anywhere in the list is a 304."""
    rev = put(couch, db, "d", {"x": 1})
    r = couch.put(f"/{db}/d/a.bin", params={"rev": rev}, data=b"\x00\x01\x02",
                  headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201, r.text
    rev = r.json()["rev"]
    for header in (f'"other", "{rev}"', f'W/"{rev}"', f'"a","b" "{rev}"'):
        assert couch.get(f"/{db}/d", headers={"If-None-Match": header}).status_code == 304, header
    assert couch.get(f"/{db}/d", headers={"If-None-Match": '"other", *'}).status_code == 200
    etag = couch.get(f"/{db}/d/a.bin").headers["ETag"]
    for header in (f'"other", {etag}', f"W/{etag}"):
        assert couch.get(f"/{db}/d/a.bin", headers={"If-None-Match": header}).status_code == 304, header
    assert couch.get(f"/{db}/d/a.bin", headers={"If-None-Match": "*"}).status_code == 200


def test_a_revision_read_by_rev_or_open_revs_has_no_meta_fields(couch, db):
    """Only CouchDB's `open_doc` fills a document's meta: `?rev=` (without `latest`) and `open_revs` answer
    without `_revs_info`, `_conflicts`, `_deleted_conflicts` and `_local_seq` whatever the query asks; `revs`
    still adds `_revisions`."""
    replicate(couch, db, "d", "1-a")
    replicate(couch, db, "d", "1-b")
    meta = {"revs_info": "true", "conflicts": "true", "deleted_conflicts": "true", "local_seq": "true"}
    assert couch.get(f"/{db}/d", params={**meta, "rev": "1-a"}).json() == {"_id": "d", "_rev": "1-a"}
    assert couch.get(f"/{db}/d", params={"rev": "1-a", "meta": "true", "revs": "true"}).json() == {
        "_id": "d", "_rev": "1-a", "_revisions": {"start": 1, "ids": ["a"]}}
    rows = couch.get(f"/{db}/d", params={**meta, "open_revs": "all"}).json()
    assert sorted(rows, key=lambda row: row["ok"]["_rev"]) == [
        {"ok": {"_id": "d", "_rev": "1-a"}}, {"ok": {"_id": "d", "_rev": "1-b"}}]
    rows = couch.get(f"/{db}/d", params={**meta, "open_revs": '["1-a"]'}).json()
    assert rows == [{"ok": {"_id": "d", "_rev": "1-a"}}]
    # The winner, read without `rev`, has them; so has `rev` with `latest`, which reads the winner.
    winner = couch.get(f"/{db}/d", params={"conflicts": "true", "revs_info": "true"}).json()
    assert winner["_rev"] == "1-b" and winner["_conflicts"] == ["1-a"] and "_revs_info" in winner
    latest = couch.get(f"/{db}/d", params={"rev": "1-a", "latest": "true", "conflicts": "true"}).json()
    assert latest["_rev"] == "1-b" and latest["_conflicts"] == ["1-a"]


@pytest.mark.parametrize("method, path, allowed", [
    ("DELETE", "/_all_dbs", "GET,HEAD"),
    ("PUT", "/{db}/_changes", "GET,POST,HEAD"),
    ("DELETE", "/{db}/_security", "PUT,GET"),
    ("POST", "/{db}/_revs_limit", "PUT,GET"),
    ("POST", "/_uuids", "GET"),
    ("COPY", "/{db}", "DELETE,GET,HEAD,POST"),
    ("POST", "/_node/_local/_stats", "GET"),
])
def test_a_405_allows_what_its_reason_lists(couch, db, method, path, allowed):
    """CouchDB's `send_method_not_allowed` sends one list as the `Allow` header and in the reason."""
    r = couch.request(method, path.format(db=db))
    assert r.status_code == 405, r.text
    assert r.json() == {"error": "method_not_allowed", "reason": f"Only {allowed} allowed"}
    assert r.headers["Allow"] == allowed
