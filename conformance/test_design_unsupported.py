"""`_show`, `_list`, `_update` and `_rewrite` (deprecated in CouchDB 3): CouchDB 3.4 still runs them; couchlite
answers 501 `not_implemented` with a reason naming the function and what to do instead."""

from conftest import is_couchlite

DDOC = {
    "shows": {"s": "function(doc, req) { return 'shown'; }"},
    "lists": {"l": "function(head, req) { send('listed'); }"},
    "updates": {"u": "function(doc, req) { return [null, 'updated']; }"},
    "views": {"v": {"map": "function(doc) { emit(doc._id, null); }"}},
    "rewrites": [{"from": "/a", "to": "../../a"}],
}


def test_show_list_update_rewrite_are_501_with_a_reason(couch, db):
    assert couch.put(f"/{db}/_design/app", json=DDOC).status_code == 201
    assert couch.put(f"/{db}/a", json={}).status_code == 201
    requests = {
        "_show": ("GET", f"/{db}/_design/app/_show/s/a"),
        "_list": ("GET", f"/{db}/_design/app/_list/l/v"),
        "_update": ("POST", f"/{db}/_design/app/_update/u"),
        "_rewrite": ("GET", f"/{db}/_design/app/_rewrite/a"),
    }
    for endpoint, (method, path) in requests.items():
        r = couch.request(method, path, headers={"Content-Type": "application/json"}, data=b"{}")
        if is_couchlite(couch):
            assert r.status_code == 501, (endpoint, r.status_code, r.text)
            body = r.json()
            assert body["error"] == "not_implemented" and endpoint in body["reason"], body
            assert "deprecated" in body["reason"]
        else:
            assert r.status_code < 500, (endpoint, r.status_code, r.text)
