"""`_rewrite` (deprecated in CouchDB 3): CouchDB 3.4 still runs it; couchlite answers 501 `not_implemented` with
a reason saying what to do instead. (`_show`, `_list` and `_update` run: test_show_list_update.py.)"""

from conftest import is_couchlite

DDOC = {
    "views": {"v": {"map": "function(doc) { emit(doc._id, null); }"}},
    "rewrites": [{"from": "/a", "to": "../../a"}],
}


def test_rewrite_is_501_with_a_reason(couch, db):
    assert couch.put(f"/{db}/_design/app", json=DDOC).status_code == 201
    assert couch.put(f"/{db}/a", json={}).status_code == 201
    r = couch.get(f"/{db}/_design/app/_rewrite/a")
    if is_couchlite(couch):
        assert r.status_code == 501, (r.status_code, r.text)
        body = r.json()
        assert body["error"] == "not_implemented" and "_rewrite" in body["reason"], body
        assert "deprecated" in body["reason"]
    else:
        assert r.status_code < 500, (r.status_code, r.text)
