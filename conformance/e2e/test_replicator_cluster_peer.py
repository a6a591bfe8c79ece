"""couchlite's replicator against a CouchDB cluster's answers, without a cluster (issue 28, item 3).

`fake_cluster.FakeCluster` answers as a three-node CouchDB 3.4.3 cluster does where it differs from one node:
opaque, non-monotonic sequences (also as `update_seq`), `instance_start_time` "0", a `since` it cannot place
rewinding the feed, and what a node restart looks like from outside: 500/503 for a while, 202 Accepted for writes
that reached fewer copies than the quorum (`_bulk_docs`, multipart `PUT`, the `_local` checkpoint), a 409 on a
checkpoint, and `_bulk_get` answering not_found for a revision a lagging copy has not got yet.

A couchlite server pulls from it and pushes into it with `POST /_replicate`; afterwards every document's leaves,
`_revisions`, `_conflicts` and attachment bytes are compared on both sides, and a second run must resume from the
opaque checkpoint exactly as the cluster handed it out. (The same scenarios against a real cluster:
bench/cluster_scenarios.py, not in CI.)
"""

from __future__ import annotations

import json
import random
import urllib.parse

import requests

from fake_cluster import FakeCluster, md5_digest

SMALL = 120
PHOTOS = 3
BATCH = 25


def leaves_on(base: str, db: str, doc_id: str) -> dict[str, dict]:
    r = requests.get(f"{base}/{db}/{urllib.parse.quote(doc_id, safe='')}",
                     params={"open_revs": "all", "revs": "true"}, headers={"Accept": "application/json"})
    assert r.status_code == 200, (doc_id, r.status_code, r.text[:200])
    return {row["ok"]["_rev"]: row["ok"] for row in r.json() if "ok" in row}


def assert_same(base: str, db: str, fake: FakeCluster) -> int:
    """Every document of couchlite's `db` and of the fake: same leaves, same bodies and `_revisions`, the same
    attachment digests, and couchlite's attachment bytes have the digest. Returns the number of revisions."""
    rows = requests.get(f"{base}/{db}/_all_docs").json()["rows"]
    ids = {row["id"] for row in rows}
    assert ids == set(fake.order), (len(ids), len(fake.order))
    checked = 0
    for doc_id in sorted(ids):
        mine = leaves_on(base, db, doc_id)
        assert sorted(mine) == fake.leaves(doc_id), (doc_id, sorted(mine), fake.leaves(doc_id))
        for rev, doc in mine.items():
            theirs = fake.revs[(doc_id, rev)]
            assert doc["_revisions"] == theirs["_revisions"], (doc_id, rev)
            body = {k: v for k, v in doc.items() if k not in ("_attachments", "_revisions")}
            assert body == {k: v for k, v in theirs.items() if k not in ("_attachments", "_revisions")}, doc_id
            for name, stub in (doc.get("_attachments") or {}).items():
                data = fake.bytes[(doc_id, rev, name)]
                assert stub["digest"] == md5_digest(data) == theirs["_attachments"][name]["digest"], (doc_id, name)
                got = requests.get(f"{base}/{db}/{doc_id}/{name}", params={"rev": rev})
                assert got.content == data, (doc_id, name)
            checked += 1
    return checked


def seed_fake(fake: FakeCluster) -> tuple[str, list[str]]:
    """SMALL small documents, PHOTOS photos, and doc-0007 in conflict (two leaves on generation 2)."""
    rng = random.Random(28)
    first = {}
    for i in range(SMALL):
        first[i] = fake.add(f"doc-{i:04d}", {"type": "note", "n": i, "text": "x" * (i % 60)})
    for i in range(PHOTOS):
        fake.add(f"photo-{i}", {"type": "photo"}, attachments={"photo.jpg": rng.randbytes(70_000 + i)})
    a = fake.add("doc-0007", {"n": 7, "side": "couchlite"}, parent=first[7], tag="a")
    b = fake.add("doc-0007", {"n": 7, "side": "cluster"}, parent=first[7], tag="b")
    return "doc-0007", [a, b]


def replicate(base: str, source: str, target: str, **extra) -> dict:
    body = {"source": source, "target": target, "worker_batch_size": BATCH, **extra}
    r = requests.post(f"{base}/_replicate", json=body, timeout=120)
    assert r.status_code == 200, (r.status_code, r.text[:500])
    return r.json()


def changes_since(fake: FakeCluster) -> list[str]:
    return [urllib.parse.parse_qs(path.partition("?")[2])["since"][0] for method, path in fake.log
            if path.startswith("/db/_changes")]


def test_pull_from_a_cluster_keeps_opaque_sequences_and_rides_out_a_node_restart(servers):
    server = servers("pull")
    fake = FakeCluster()
    try:
        conflicted, revs = seed_fake(fake)
        # A node restarting while the job starts: the feed and _bulk_get fail for a moment, a lagging copy
        # has not got one revision yet, the checkpoint write meets a conflict and then a partial quorum.
        fake.inject("_changes", 500, 503)
        fake.inject("_bulk_get", 500)
        fake.lagging.add(("doc-0003", fake.leaves("doc-0003")[0]))
        fake.inject("PUT _local", 409, 202)
        result = replicate(server.url, fake.url, "pulled", create_target=True)
        assert result["ok"] is True
        history = result["history"][0]
        leaves = SMALL + PHOTOS + 1  # doc-0007 has two
        assert history["docs_written"] == leaves and history["doc_write_failures"] == 0, history
        assert result["source_last_seq"] == fake.update_seq(), "the opaque sequence was not kept as handed out"
        assert assert_same(server.url, "pulled", fake) == leaves
        doc = requests.get(f"{server.url}/pulled/{conflicted}", params={"conflicts": "true"}).json()
        winner = max(revs, key=lambda r: (int(r.split("-")[0]), r.split("-")[1]))
        assert doc["_rev"] == winner and doc["_conflicts"] == [r for r in revs if r != winner], doc

        # Resume: the next run asks from the checkpoint, byte for byte the string the cluster handed out.
        checkpoint = result["source_last_seq"]
        for i in range(5):
            fake.add(f"late-{i}", {"n": i})
        fake.add("doc-0001", {"n": 1, "edited": True}, parent=fake.leaves("doc-0001")[0])
        fake.log.clear()
        again = replicate(server.url, fake.url, "pulled")
        assert changes_since(fake)[0] == checkpoint, changes_since(fake)
        assert again["history"][0]["docs_written"] == 6, again["history"][0]
        assert again["source_last_seq"] == fake.update_seq()
        assert_same(server.url, "pulled", fake)

        # A since the cluster cannot place any more (a shard copy was replaced): the feed starts over and
        # nothing is written twice.
        fake.forgotten.add(again["source_last_seq"])
        fake.add("later", {"n": 0})
        fake.log.clear()
        rewound = replicate(server.url, fake.url, "pulled")
        assert changes_since(fake)[0] == "0" or changes_since(fake)[0] == again["source_last_seq"]
        assert rewound["history"][0]["docs_written"] == 1, rewound["history"][0]
        assert rewound["history"][0]["missing_checked"] >= SMALL, rewound["history"][0]
        assert_same(server.url, "pulled", fake)
    finally:
        fake.close()


def test_push_into_a_cluster_accepts_202_and_retries_500_during_a_node_restart(servers):
    server = servers("push")
    s = requests.Session()
    assert s.put(f"{server.url}/src").status_code == 201
    docs = [{"_id": f"doc-{i:04d}", "type": "note", "n": i} for i in range(SMALL)]
    assert s.post(f"{server.url}/src/_bulk_docs", json={"docs": docs}).status_code == 201
    rng = random.Random(3)
    for i in range(PHOTOS):
        r = s.put(f"{server.url}/src/photo-{i}/photo.jpg", data=rng.randbytes(60_000 + i),
                  headers={"Content-Type": "image/jpeg"})
        assert r.status_code == 201, r.text
    base = s.get(f"{server.url}/src/doc-0007").json()
    gen, base_hash = base["_rev"].split("-")
    conflict = [{"_id": "doc-0007", "_rev": f"2-{h}", "n": 7, "side": h[:1],
                 "_revisions": {"start": 2, "ids": [h, base_hash]}} for h in ("a" * 32, "b" * 32)]
    r = s.post(f"{server.url}/src/_bulk_docs", json={"docs": conflict, "new_edits": False})
    assert r.status_code == 201, r.text

    fake = FakeCluster()
    try:
        # A node down: writes reach fewer copies than the quorum (202), the first tries fail (500).
        fake.inject("_revs_diff", 500)
        fake.inject("_bulk_docs", 500, *[202] * 20)
        fake.inject("PUT doc", 503, *[202] * 10)
        fake.inject("PUT _local", 202, 409, *[202] * 10)
        result = replicate(server.url, "src", fake.url)
        history = result["history"][0]
        assert result["ok"] is True and history["doc_write_failures"] == 0, history
        leaves = SMALL + PHOTOS + 1  # doc-0007 has two
        assert history["docs_written"] == leaves, history
        assert assert_same(server.url, "src", fake) == leaves
        assert any(doc_id.startswith("_local/") for doc_id in fake.local), fake.local

        # The checkpoint was stored (202): a second run reads nothing again.
        fake.log.clear()
        again = replicate(server.url, "src", fake.url)
        assert again.get("no_changes") is True or again["history"][0]["docs_written"] == 0, again
        assert not any(path.startswith("/db/_bulk_docs") for _, path in fake.log), fake.log
    finally:
        fake.close()


def test_fake_cluster_sequences_are_opaque_and_not_monotonic():
    """The fake itself: its sequences must be the kind a replicator cannot parse its way through."""
    fake = FakeCluster()
    try:
        for i in range(30):
            fake.add(f"d{i}", {"n": i})
        feed = requests.get(f"{fake.url}/_changes", params={"since": "0"}).json()
        numbers = [int(row["seq"].split("-")[0]) for row in feed["results"]]
        assert numbers != sorted(numbers)
        assert all(json.dumps(row["seq"]).startswith('"') for row in feed["results"])
        info = requests.get(fake.url).json()
        assert info["update_seq"] == feed["last_seq"] and info["instance_start_time"] == "0"
    finally:
        fake.close()
