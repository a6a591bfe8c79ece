"""`GET /db/_shards`, `GET /db/_shards/{docid}` and `POST /db/_sync_shards` (mem3_httpd): a database's shard ranges
and the nodes holding them. couchlite keeps each database whole, one range on its one node, in CouchDB's shape;
checked against CouchDB 3.4.3 (whose q=2 gives two ranges)."""

import re

RANGE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{8}$")


def test_shards_cover_the_whole_hash_space_on_known_nodes(couch, db):
    r = couch.get(f"/{db}/_shards")
    assert r.status_code == 200, r.text
    shards = r.json()["shards"]
    ranges = sorted(shards)
    assert ranges and all(RANGE.match(text) for text in ranges), ranges
    assert ranges[0].startswith("00000000-") and ranges[-1].endswith("-ffffffff")
    for low, high in zip(ranges, ranges[1:]):
        assert int(low.split("-")[1], 16) + 1 == int(high.split("-")[0], 16), ranges
    nodes = set(couch.get("/_membership").json()["cluster_nodes"])
    assert all(shards[name] and set(shards[name]) <= nodes for name in ranges), shards


def test_a_documents_shard_is_one_of_the_databases(couch, db):
    shards = couch.get(f"/{db}/_shards").json()["shards"]
    for doc_id in ("a", "photo-1", "no-such-document"):
        r = couch.get(f"/{db}/_shards/{doc_id}")
        assert r.status_code == 200, r.text
        body = r.json()
        assert set(body) == {"range", "nodes"} and shards[body["range"]] == body["nodes"], body


def test_sync_shards_is_accepted(couch, db):
    r = couch.post(f"/{db}/_sync_shards")
    assert (r.status_code, r.json()) == (202, {"ok": True})


def test_shards_of_a_missing_database_is_404(couch):
    r = couch.get("/ct-no-such-database-shards/_shards")
    assert r.status_code == 404 and r.json()["error"] == "not_found", r.text


def test_shards_methods(couch, db):
    r = couch.post(f"/{db}/_shards")
    assert (r.status_code, r.json()) == (405, {"error": "method_not_allowed", "reason": "Only GET allowed"})
    r = couch.get(f"/{db}/_sync_shards")
    assert (r.status_code, r.json()) == (405, {"error": "method_not_allowed", "reason": "Only POST allowed"})
