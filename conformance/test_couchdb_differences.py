"""The differences real clients' own test suites still found between CouchDB 3.4.3 and couchlite (issue 38,
item 2), each as CouchDB answers it: run against CouchDB 3.4.3 and couchlite alike."""
import email.parser
import email.policy
import re

import pytest


@pytest.fixture
def ids_db(couch, db):
    docs = [{"_id": i, "n": n} for n, i in enumerate(["a", "b", "m", "z"])]
    assert couch.post(f"/{db}/_bulk_docs", json={"docs": docs}).status_code == 201
    return db


def found(couch, db, selector, **extra):
    r = couch.post(f"/{db}/_find", json={"selector": selector, **extra})
    assert r.status_code == 200, r.text
    return sorted(d["_id"] for d in r.json()["docs"])


# Mango serves `_id` from `_all_docs`, in raw (Erlang term) order, where objects, arrays, atoms and numbers all
# sort before strings (mango_json:cmp_raw/2); every other field compares in view collation.
@pytest.mark.parametrize("selector,expected", [
    ({"_id": {"$gt": {}}}, ["a", "b", "m", "z"]),
    ({"_id": {"$gte": {}}}, ["a", "b", "m", "z"]),
    ({"_id": {"$gt": []}}, ["a", "b", "m", "z"]),
    ({"_id": {"$gt": None}}, ["a", "b", "m", "z"]),
    ({"_id": {"$gt": 5}}, ["a", "b", "m", "z"]),
    ({"_id": {"$lt": {}}}, []),
    ({"_id": {"$lte": {}}}, []),
    ({"_id": {"$lt": [1]}}, []),
    ({"_id": {"$ne": {}}}, ["a", "b", "m", "z"]),
    ({"_id": {"$gt": "b", "$lt": "z"}}, ["m"]),
    ({"_id": {"$in": [{}, "m"]}}, ["m"]),
    ({"n": {"$gte": 0}, "_id": {"$gt": {}}}, ["a", "b", "m", "z"]),
])
def test_mango_compares_id_in_raw_order(couch, ids_db, selector, expected):
    assert found(couch, ids_db, selector) == expected


def test_mango_compares_other_fields_in_view_collation(couch, ids_db):
    assert couch.put(f"/{ids_db}/s", json={"s": "text"}).status_code == 201
    assert found(couch, ids_db, {"s": {"$gt": {}}}) == []
    assert found(couch, ids_db, {"s": {"$lt": {}}}) == ["s"]


def test_mango_escaped_leading_dollar_names_a_field(couch, db):
    assert couch.put(f"/{db}/d", json={"$foobar": "a"}).status_code == 201
    assert couch.put(f"/{db}/e", json={"foobar": "a"}).status_code == 201
    assert found(couch, db, {"\\$foobar": "a"}) == ["d"]
    assert found(couch, db, {"\\$foobar": {"$exists": True}}) == ["d"]


def test_index_into_a_javascript_design_document_is_refused_and_leaves_it_alone(couch, db):
    ddoc = {"language": "javascript", "views": {"by-n": {"map": "function(doc){ emit(doc.n, null); }"}}}
    assert couch.put(f"/{db}/_design/js", json=ddoc).status_code == 201
    before = couch.get(f"/{db}/_design/js").json()
    r = couch.post(f"/{db}/_index", json={"index": {"fields": ["n"]}, "ddoc": "js", "name": "by-n"})
    assert r.status_code == 400, r.text
    assert r.json() == {
        "error": "invalid_ddoc_lang",
        "reason": "Existing design doc has an invalid language: "
                  "{<<108,97,110,103,117,97,103,101>>,<<106,97,118,97,115,99,114,105,112,116>>}"}
    assert couch.get(f"/{db}/_design/js").json() == before


def test_index_into_a_design_document_without_language_is_refused(couch, db):
    assert couch.put(f"/{db}/_design/bare", json={"views": {}}).status_code == 201
    r = couch.post(f"/{db}/_index", json={"index": {"fields": ["n"]}, "ddoc": "bare", "name": "x"})
    assert r.status_code == 400, r.text
    assert r.json() == {"error": "invalid_ddoc_lang", "reason": "Existing design doc has an invalid language: false"}
    assert "language" not in couch.get(f"/{db}/_design/bare").json()


def test_index_into_a_deleted_design_document_is_created(couch, db):
    rev = couch.put(f"/{db}/_design/gone", json={"language": "javascript"}).json()["rev"]
    assert couch.delete(f"/{db}/_design/gone?rev={rev}").status_code == 200
    r = couch.post(f"/{db}/_index", json={"index": {"fields": ["n"]}, "ddoc": "gone", "name": "x"})
    assert r.status_code == 200 and r.json()["result"] == "created", r.text


BODY = bytes(range(256)) * 4  # 1,024 bytes, each offset recognisable


@pytest.fixture
def attachment(couch, db):
    r = couch.put(f"/{db}/d/a.bin", data=BODY, headers={"Content-Type": "application/x-test"})
    assert r.status_code == 201, r.text
    return f"/{db}/d/a.bin"


def byteranges(response):
    """The parts of a multipart/byteranges body: (Content-Type, Content-Range, bytes) each."""
    content_type = response.headers["Content-Type"]
    assert content_type.startswith("multipart/byteranges; boundary="), content_type
    boundary = re.search(r'boundary="?([^";]+)"?', content_type).group(1).encode()
    body = response.content
    assert body.startswith(b"--" + boundary) and body.endswith(b"--" + boundary + b"--"), body[-80:]
    parts = []
    for chunk in body.split(b"--" + boundary)[1:-1]:
        assert chunk.startswith(b"\r\n") and chunk.endswith(b"\r\n"), chunk[:80]
        head, _, data = chunk[2:-2].partition(b"\r\n\r\n")
        headers = email.parser.BytesHeaderParser(policy=email.policy.HTTP).parsebytes(head + b"\r\n\r\n")
        parts.append((headers["Content-Type"], headers["Content-Range"], data))
    return parts


def test_several_ranges_are_a_206_multipart_byteranges(couch, attachment):
    r = couch.get(attachment, headers={"Range": "bytes=0-9,20-29"})
    assert r.status_code == 206, r.text
    assert byteranges(r) == [
        ("application/x-test", "bytes 0-9/1024", BODY[0:10]),
        ("application/x-test", "bytes 20-29/1024", BODY[20:30]),
    ]


def test_several_ranges_keep_their_order_overlaps_suffixes_and_open_ends(couch, attachment):
    r = couch.get(attachment, headers={"Range": "bytes=1000-, 5-7,-3,6-6,1020-5000"})
    assert r.status_code == 206, r.text
    assert [(p[1], p[2]) for p in byteranges(r)] == [
        ("bytes 1000-1023/1024", BODY[1000:]),
        ("bytes 5-7/1024", BODY[5:8]),
        ("bytes 1021-1023/1024", BODY[1021:]),
        ("bytes 6-6/1024", BODY[6:7]),
        ("bytes 1020-1023/1024", BODY[1020:]),
    ]


def test_ten_ranges_or_a_range_from_zero_to_the_end_send_the_whole_attachment(couch, attachment):
    ten = ",".join(f"{i}-{i}" for i in range(10))
    for spec in (f"bytes={ten}", "bytes=0-9,0-"):
        r = couch.get(attachment, headers={"Range": spec})
        assert r.status_code == 200 and r.content == BODY, spec


def test_several_ranges_with_one_backwards_are_416(couch, attachment):
    r = couch.get(attachment, headers={"Range": "bytes=0-9,30-20"})
    assert r.status_code == 416
    assert r.json()["error"] == "requested_range_not_satisfiable"


@pytest.fixture
def local_db(couch, db):
    docs = [
        {"_id": "_local/shard-sync-foo-bar", "_rev": "0-1", "seq": 1, "target_uuid": "4f3eb3181db904d62176fb81626f84d0"},
        {"_id": "_local/purge-mrview-foo-bar", "_rev": "0-1", "purge_seq": 0, "type": "mrview"},
        {"_id": "_local/1-foo-bar"},
        {"_id": "_local/2-foo-bar", "v": 2},
        {"_id": "_local/3-foo-bar"},
        {"_id": "ordinary"},
    ]
    assert couch.post(f"/{db}/_bulk_docs", json={"docs": docs}).status_code == 201
    return db


def local_row(n):
    return {"id": f"_local/{n}-foo-bar", "key": f"_local/{n}-foo-bar", "value": {"rev": "0-1"}}


def test_local_docs_lists_the_local_documents_without_the_clusters_own(couch, local_db):
    # As CouchDB's own chttpd_local_docs_tests: the purge and shard-sync checkpoints only with include_system.
    r = couch.get(f"/{local_db}/_local_docs")
    assert r.status_code == 200, r.text
    assert r.json() == {"total_rows": None, "offset": None, "rows": [local_row(1), local_row(2), local_row(3)]}
    ids = [row["id"] for row in couch.get(f"/{local_db}/_local_docs?include_system=true").json()["rows"]]
    assert ids == ["_local/1-foo-bar", "_local/2-foo-bar", "_local/3-foo-bar", "_local/purge-mrview-foo-bar",
                   "_local/shard-sync-foo-bar"]


def test_local_docs_takes_the_all_docs_parameters(couch, local_db):
    r = couch.get(f"/{local_db}/_local_docs", params={"descending": "true", "limit": "2"}).json()
    assert r["rows"] == [local_row(3), local_row(2)]
    r = couch.get(f"/{local_db}/_local_docs", params={"startkey": '"_local/2"', "skip": "1"}).json()
    assert r["rows"] == [local_row(3)]
    r = couch.get(f"/{local_db}/_local_docs", params={"endkey": '"_local/2-foo-bar"', "inclusive_end": "false"}).json()
    assert r["rows"] == [local_row(1)]
    r = couch.get(f"/{local_db}/_local_docs", params={"key": '"_local/2-foo-bar"', "include_docs": "true"}).json()
    assert r["rows"] == [{**local_row(2), "doc": {"_id": "_local/2-foo-bar", "_rev": "0-1", "v": 2}}]
    r = couch.post(f"/{local_db}/_local_docs", json={"keys": ["_local/3-foo-bar", "_local/1-foo-bar"]})
    assert r.status_code == 200, r.text
    assert r.json()["rows"] == [local_row(3), local_row(1)]


def test_post_to_a_local_document_is_415_as_for_any_document(couch, db):
    r = couch.post(f"/{db}/_local/x", json={"a": 1})
    assert r.status_code == 415, r.text
    assert r.json() == {"error": "bad_content_type", "reason": "Content-Type must be multipart/form-data"}
    assert couch.get(f"/{db}/_local/x").status_code == 404


def test_open_revs_all_lists_the_leaves_by_revision_not_winner_first(couch, db):
    hashes = {h: h * 32 for h in "0f5"}
    docs = [
        {"_id": "c", "_rev": f"1-{hashes['f']}", "v": "f"},
        {"_id": "c", "_rev": f"1-{hashes['0']}", "v": "0"},
        {"_id": "c", "_rev": f"2-{hashes['5']}", "v": "5", "_revisions": {"start": 2, "ids": [hashes["5"], hashes["f"]]}},
    ]
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": docs, "new_edits": False})
    assert r.status_code == 201, r.text
    assert couch.get(f"/{db}/c").json()["_rev"] == f"2-{hashes['5']}"  # the winner
    answer = couch.get(f"/{db}/c?open_revs=all").json()
    assert [entry["ok"]["_rev"] for entry in answer] == [f"1-{hashes['0']}", f"2-{hashes['5']}"]
