"""`validate_doc_update` on every write path: PUT, POST, DELETE, `_bulk_docs` (per-document items, also with
`new_edits: false`), `PUT ?new_edits=false`, multipart PUT, attachment PUT and DELETE, COPY. Admins are not
exempt. Every assertion holds for Apache CouchDB 3.4.3 as well as couchlite."""

import json
import threading
import time

import requests

GUARD = """function(newDoc, oldDoc, userCtx, secObj) {
  if (newDoc.forbid) throw({forbidden: 'forbidden ' + newDoc._id});
  if (newDoc.unauth) throw({unauthorized: 'who are you, ' + userCtx.name + '?'});
  if (newDoc.plain) throw('plain text');
  if (newDoc.error) throw(new Error('an error'));
  if (newDoc._deleted && oldDoc && oldDoc.keep) throw({forbidden: 'keep ' + newDoc._id});
  if (newDoc._attachments && newDoc._attachments['bad.txt']) throw({forbidden: 'no bad.txt'});
  if (newDoc.locked_copy) throw({forbidden: 'no copies'});
}"""


def setup(couch, db, guard=GUARD, ddoc="guard"):
    r = couch.put(f"/{db}/_design/{ddoc}", json={"validate_doc_update": guard})
    assert r.status_code == 201, r.text


def test_put_forbidden_is_403(couch, db):
    setup(couch, db)
    r = couch.put(f"/{db}/a", json={"forbid": True})
    assert r.status_code == 403
    assert r.json() == {"error": "forbidden", "reason": "forbidden a"}
    assert couch.get(f"/{db}/a").status_code == 404
    assert couch.put(f"/{db}/a", json={"fine": True}).status_code == 201


def test_put_unauthorized_is_401_and_sees_the_user(couch, db):
    setup(couch, db)
    r = couch.put(f"/{db}/a", json={"unauth": True})
    assert r.status_code == 401
    assert r.json() == {"error": "unauthorized", "reason": f"who are you, {couch.user}?"}


def test_other_throws_are_500(couch, db):
    setup(couch, db)
    r = couch.put(f"/{db}/s", json={"plain": True})
    assert r.status_code == 500
    assert r.json() == {"error": "unknown_error", "reason": "plain text"}
    r = couch.put(f"/{db}/e", json={"error": True})
    assert r.status_code == 500
    assert r.json()["error"] == "Error"


def test_post_is_validated(couch, db):
    setup(couch, db)
    r = couch.post(f"/{db}", json={"_id": "p", "forbid": True})
    assert r.status_code == 403 and r.json()["reason"] == "forbidden p"


def test_delete_is_validated_with_the_old_document(couch, db):
    setup(couch, db)
    rev = couch.put(f"/{db}/k", json={"keep": True}).json()["rev"]
    r = couch.delete(f"/{db}/k", params={"rev": rev})
    assert r.status_code == 403 and r.json() == {"error": "forbidden", "reason": "keep k"}
    assert couch.get(f"/{db}/k").status_code == 200
    rev = couch.put(f"/{db}/free", json={}).json()["rev"]
    assert couch.delete(f"/{db}/free", params={"rev": rev}).status_code == 200


def test_arguments_have_couchdbs_shape(couch, db):
    guard = """function(newDoc, oldDoc, userCtx, secObj) {
      if (!newDoc.dump) return;
      throw({forbidden: JSON.stringify({newDoc: newDoc, oldDoc: oldDoc, userCtx: userCtx, secObj: secObj,
                                        self: this._id})});
    }"""
    setup(couch, db, guard)
    r = couch.put(f"/{db}/new", json={"dump": 1})
    seen = json.loads(r.json()["reason"])
    assert seen["newDoc"] == {"_id": "new", "dump": 1}
    assert seen["oldDoc"] is None
    assert seen["userCtx"]["db"] == db and seen["userCtx"]["name"] == couch.user
    assert "_admin" in seen["userCtx"]["roles"]
    assert isinstance(seen["secObj"], dict)
    assert seen["self"] == "_design/guard"
    rev = couch.put(f"/{db}/old", json={"v": 1}).json()["rev"]
    seen = json.loads(couch.put(f"/{db}/old", params={"rev": rev}, json={"dump": 2}).json()["reason"])
    # The edited revision is the new document's `_rev` (the new rev id is made after validation).
    assert seen["newDoc"]["_rev"] == rev and seen["newDoc"]["dump"] == 2
    assert seen["newDoc"]["_revisions"] == {"start": 1, "ids": [rev.split("-")[1]]}
    assert seen["oldDoc"]["_id"] == "old" and seen["oldDoc"]["_rev"] == rev and seen["oldDoc"]["v"] == 1


def test_every_validation_function_runs(couch, db):
    setup(couch, db)
    setup(couch, db, "function(newDoc) { if (newDoc.second) throw({forbidden: 'second says no'}); }", "second")
    assert couch.put(f"/{db}/a", json={"second": True}).json() == {"error": "forbidden", "reason": "second says no"}
    assert couch.put(f"/{db}/b", json={"forbid": True}).status_code == 403
    assert couch.put(f"/{db}/c", json={}).status_code == 201


def test_design_documents_are_not_validated(couch, db):
    setup(couch, db, "function(newDoc) { throw({forbidden: 'nothing'}); }")
    assert couch.put(f"/{db}/doc", json={}).status_code == 403
    assert couch.put(f"/{db}/_design/other", json={"forbid": True}).status_code == 201
    assert couch.put(f"/{db}/_local/checkpoint", json={"forbid": True}).status_code == 201


def test_a_deleted_validation_function_no_longer_runs(couch, db):
    setup(couch, db)
    assert couch.put(f"/{db}/a", json={"forbid": True}).status_code == 403
    rev = couch.get(f"/{db}/_design/guard").json()["_rev"]
    assert couch.delete(f"/{db}/_design/guard", params={"rev": rev}).status_code == 200
    assert couch.put(f"/{db}/a", json={"forbid": True}).status_code == 201


def test_an_edited_validation_function_is_the_one_that_runs(couch, db):
    setup(couch, db)
    rev = couch.get(f"/{db}/_design/guard").json()["_rev"]
    r = couch.put(f"/{db}/_design/guard", params={"rev": rev}, json={
        "validate_doc_update": "function(newDoc) { if (newDoc.v2) throw({forbidden: 'v2'}); }"})
    assert r.status_code == 201
    assert couch.put(f"/{db}/a", json={"forbid": True}).status_code == 201
    assert couch.put(f"/{db}/b", json={"v2": True}).json() == {"error": "forbidden", "reason": "v2"}


def test_bulk_docs_items_per_document(couch, db):
    setup(couch, db)
    r = couch.post(f"/{db}/_bulk_docs", json={"docs": [
        {"_id": "ok1"}, {"_id": "f", "forbid": True}, {"_id": "u", "unauth": True}, {"_id": "s", "plain": True},
        {"_id": "ok2"}]})
    assert r.status_code == 201, r.text
    items = r.json()
    assert [item["id"] for item in items] == ["ok1", "f", "u", "s", "ok2"]
    assert items[0]["ok"] and items[4]["ok"]
    assert items[1] == {"id": "f", "error": "forbidden", "reason": "forbidden f"}
    assert items[2] == {"id": "u", "error": "unauthorized", "reason": f"who are you, {couch.user}?"}
    assert items[3] == {"id": "s", "error": "unknown_error", "reason": "plain text"}
    assert couch.get(f"/{db}/ok1").status_code == 200 and couch.get(f"/{db}/f").status_code == 404


def test_bulk_docs_new_edits_false_skips_forbidden_documents(couch, db):
    setup(couch, db)
    r = couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": "r1", "_rev": "1-abc"},
        {"_id": "r2", "_rev": "2-def", "_revisions": {"start": 2, "ids": ["def", "abc"]}, "forbid": True},
        {"_id": "r3", "_rev": "1-abc", "unauth": True}]})
    assert r.status_code == 201, r.text
    assert r.json() == [
        {"id": "r2", "rev": "2-def", "error": "forbidden", "reason": "forbidden r2"},
        {"id": "r3", "rev": "1-abc", "error": "unauthorized", "reason": f"who are you, {couch.user}?"},
    ]
    assert couch.get(f"/{db}/r1").status_code == 200
    assert couch.get(f"/{db}/r2").status_code == 404 and couch.get(f"/{db}/r3").status_code == 404


def test_replicated_write_sees_the_nearest_stored_ancestor_as_old_doc(couch, db):
    setup(couch, db, """function(newDoc, oldDoc) {
      if (newDoc.check && (!oldDoc || oldDoc.v != 1)) throw({forbidden: 'old was ' + JSON.stringify(oldDoc)});
    }""")
    rev = couch.put(f"/{db}/x", json={"v": 1}).json()["rev"]
    h = rev.split("-")[1]
    r = couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": "x", "_rev": "3-ccc", "_revisions": {"start": 3, "ids": ["ccc", "bbb", h]}, "check": True}]})
    assert r.status_code == 201 and r.json() == [], r.text
    r = couch.post(f"/{db}/_bulk_docs", json={"new_edits": False, "docs": [
        {"_id": "y", "_rev": "2-ccc", "_revisions": {"start": 2, "ids": ["ccc", "bbb"]}, "check": True}]})
    assert r.json()[0]["error"] == "forbidden" and r.json()[0]["reason"] == "old was null"


def test_put_new_edits_false_is_validated(couch, db):
    setup(couch, db)
    r = couch.put(f"/{db}/rep", params={"new_edits": "false"}, json={"_rev": "1-abc", "forbid": True})
    assert r.status_code == 403 and r.json()["error"] == "forbidden"
    r = couch.put(f"/{db}/rep", params={"new_edits": "false"}, json={"_rev": "1-abc"})
    assert r.status_code == 201


def test_multipart_put_is_validated(couch, db):
    setup(couch, db)
    boundary = "abc123"
    doc = {"forbid": True, "_attachments": {"a.txt": {"follows": True, "content_type": "text/plain", "length": 5}}}
    body = (f"--{boundary}\r\nContent-Type: application/json\r\n\r\n{json.dumps(doc)}\r\n"
            f"--{boundary}\r\nContent-Type: text/plain\r\n\r\nhello\r\n--{boundary}--").encode()
    headers = {"Content-Type": f'multipart/related; boundary="{boundary}"'}
    r = couch.put(f"/{db}/mp", data=body, headers=headers)
    assert r.status_code == 403 and r.json() == {"error": "forbidden", "reason": "forbidden mp"}, r.text
    ok = body.replace(b'"forbid": true', b'"fine": true')
    assert couch.put(f"/{db}/mp", data=ok, headers=headers).status_code == 201


def test_attachment_put_and_delete_are_validated(couch, db):
    setup(couch, db)
    rev = couch.put(f"/{db}/doc", json={}).json()["rev"]
    r = couch.put(f"/{db}/doc/bad.txt", params={"rev": rev}, data=b"x", headers={"Content-Type": "text/plain"})
    assert r.status_code == 403 and r.json() == {"error": "forbidden", "reason": "no bad.txt"}
    r = couch.put(f"/{db}/doc/good.txt", params={"rev": rev}, data=b"x", headers={"Content-Type": "text/plain"})
    assert r.status_code == 201
    rev = r.json()["rev"]
    # The attachment DELETE of a document the function keeps is refused as a document edit.
    setup(couch, db, "function(newDoc, oldDoc) { if (oldDoc && !newDoc._attachments) throw({forbidden: 'keep'}); }",
          "keep_atts")
    r = couch.delete(f"/{db}/doc/good.txt", params={"rev": rev})
    assert r.status_code == 403 and r.json() == {"error": "forbidden", "reason": "keep"}


def test_copy_is_validated(couch, db):
    setup(couch, db)
    assert couch.put(f"/{db}/_design/lockdown", json={
        "validate_doc_update": "function(newDoc) { if (newDoc._id == 'copy') throw({forbidden: 'no copies'}); }"
    }).status_code == 201
    assert couch.put(f"/{db}/src", json={"v": 1}).status_code == 201
    r = couch.request("COPY", f"/{db}/src", headers={"Destination": "copy"})
    assert r.status_code == 403 and r.json() == {"error": "forbidden", "reason": "no copies"}
    r = couch.request("COPY", f"/{db}/src", headers={"Destination": "copy2"})
    assert r.status_code == 201


def test_a_validation_function_that_does_not_compile_fails_every_write(couch, db):
    assert couch.put(f"/{db}/_design/broken", json={"validate_doc_update": "function(newDoc {"}).status_code == 201
    r = couch.put(f"/{db}/doc", json={})
    assert r.status_code == 500 and r.json()["error"] == "compilation_error"


def test_validation_throwing_non_objects(couch, db):
    setup(couch, db, """function(newDoc) {
      if (newDoc.t == 'null') throw null;
      if (newDoc.t == 'num') throw 42;
      if (newDoc.t == 'arr') throw [1];
      if (newDoc.t == 'obj') throw {a: 1};
      if (newDoc.t == 'both') throw {forbidden: 'f', extra: 1};
      if (newDoc.t == 'type') null.x;
    }""")
    for t in ("null", "num", "arr", "obj", "both", "type"):
        r = couch.put(f"/{db}/doc_{t}", json={"t": t})
        assert r.status_code == 500, (t, r.text)
        assert r.json()["error"], t
    assert couch.put(f"/{db}/fine", json={"t": "none"}).status_code == 201


def test_validation_looping_forever_fails_the_write_and_the_server_goes_on(couch, db):
    setup(couch, db, "function(newDoc) { if (newDoc.loop) while (true) {} }")
    result = {}

    def looping():
        result["r"] = requests.put(couch.url(f"/{db}/loop"), json={"loop": True}, auth=couch.session.auth, timeout=60)

    thread = threading.Thread(target=looping)
    thread.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    assert couch.put(f"/{db}/meanwhile", json={}).status_code == 201
    assert time.monotonic() - t0 < 3
    thread.join(60)
    assert result["r"].status_code == 500, result["r"].text
    assert couch.get(f"/{db}/loop").status_code == 404
    assert couch.put(f"/{db}/after", json={}).status_code == 201
