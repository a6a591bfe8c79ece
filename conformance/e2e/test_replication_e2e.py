"""A real replication conversation between two couchlite servers, driven by the
replicator-like client in ../replicator.py: part of the source is replicated, the target is
killed with SIGKILL and restarted on the same data dir, replication resumes from the
checkpoint, the source changes again, replication runs again, and then both databases must be
identical (leaves, bodies, `_revisions`, deletions, conflicts, attachments, counts).
"""

from __future__ import annotations

import base64
import json
import random
import signal
import time
import urllib.parse

import requests

from replicator import Endpoint, Replicator, doc_path

SOURCE_DB = "e2e-source"
TARGET_DB = "e2e-target"
REPLICATION_ID = "e2e-replication-0001"  # fixed: independent of ports and db URLs
BATCH_SIZE = 8
FIRST_RUN_BATCHES = 3        # batches before the simulated crash
CHECKPOINT_EVERY = 2         # so the 3rd batch is written but not checkpointed
TIMEOUT_S = 30

WEIRD_IDS = ["weird/id with é", "space id", "ünïcødé ✓ 雪"]


class Client:
    """Plain HTTP to one database, for seeding and comparing (not the replicator's code)."""

    def __init__(self, server_url: str, db: str):
        self.ep = Endpoint(server_url, db)

    def req(self, method, path, want=(200, 201), **kw):
        resp = self.ep.request(method, path, **kw)
        assert resp.status_code in want, f"{method} {self.ep.db}/{path}: {resp.status_code} {resp.text[:300]}"
        return resp

    def create(self):
        self.req("PUT", "", want=(201,))

    def put(self, doc: dict) -> str:
        rev = self.req("PUT", doc_path(doc["_id"]), json_body=doc).json()["rev"]
        doc["_rev"] = rev
        return rev

    def delete(self, doc_id: str, rev: str) -> str:
        return self.req("DELETE", f"{doc_path(doc_id)}?rev={rev}").json()["rev"]

    def get(self, doc_id: str, query: str = "", want=(200,)) -> requests.Response:
        return self.req("GET", doc_path(doc_id) + ("?" + query if query else ""), want=want)

    def bulk(self, docs: list[dict], new_edits: bool = True) -> list:
        return self.req("POST", "_bulk_docs", want=(201,),
                        json_body={"docs": docs, "new_edits": new_edits}).json()

    def info(self) -> dict:
        return self.req("GET", "").json()

    def leaves(self) -> dict[str, tuple]:
        """id -> (sorted leaf revs, deleted) from `_changes?style=all_docs` (includes deletions)."""
        body = self.req("GET", "_changes?style=all_docs").json()
        out = {}
        for row in body["results"]:
            out[row["id"]] = (sorted(c["rev"] for c in row["changes"]), bool(row.get("deleted")))
        return out


def wait_for(predicate, timeout=30.0, what="condition"):
    """The first true value `predicate()` returns within `timeout` seconds (polled every 50 ms)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def doc_count(server, db) -> int:
    """`doc_count` of `db` on `server` (anything with `url`), or -1 while it does not answer 200."""
    r = requests.get(f"{server.url}/{db}", timeout=5)
    return r.json()["doc_count"] if r.status_code == 200 else -1


def attachment_bytes(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


def inline(data: bytes, content_type: str) -> dict:
    return {"content_type": content_type, "data": base64.b64encode(data).decode()}


def seed_source(src: Client) -> dict[tuple[str, str], bytes]:
    """Writes the initial source docs; returns the attachment bytes by (doc id, name)."""
    atts: dict[tuple[str, str], bytes] = {}

    def photo(i: int) -> dict:
        data = attachment_bytes(i, 200_000 + 37_000 * i)
        atts[(f"photo-{i:03d}", "photo.jpg")] = data
        return {"_id": f"photo-{i:03d}", "type": "photo", "n": i,
                "_attachments": {"photo.jpg": inline(data, "image/jpeg")}}

    def notes(lo: int, hi: int) -> list[dict]:
        return [{"_id": f"note-{i:03d}", "type": "note", "text": f"hello {i}", "n": i,
                 "tags": ["a", "b"], "f": 1.5e10} for i in range(lo, hi)]

    src.bulk(notes(0, 6))
    src.put(photo(0))
    edited = {"_id": "edited", "v": 1}
    src.put(edited)
    for v in (2, 3):
        edited["v"] = v
        src.put(edited)
    src.bulk([  # two leaves on one doc: a conflict
        {"_id": "conflicted", "_rev": "2-aaaa", "side": "a",
         "_revisions": {"start": 2, "ids": ["aaaa", "1111"]}},
        {"_id": "conflicted", "_rev": "2-bbbb", "side": "b",
         "_revisions": {"start": 2, "ids": ["bbbb", "1111"]}}], new_edits=False)
    gone = {"_id": "gone", "x": 1}
    src.put(gone)
    src.delete("gone", gone["_rev"])
    for i, doc_id in enumerate(WEIRD_IDS):
        src.put({"_id": doc_id, "unicode": "héllo ✓", "nested": {"deep": [1, 2, {"x": None}]}, "i": i})
    src.put(photo(1))
    src.bulk(notes(6, 16))
    src.put({"_id": "_design/app", "views": {"by_type": {"map": "function(doc){ emit(doc.type, 1); }"}}})
    jpeg = attachment_bytes(99, 50_013)
    text = ("the quick brown fox jumps over the lazy dog\n" * 50).encode()
    atts[("album", "a.jpg")] = jpeg
    atts[("album", "notes.txt")] = text
    src.put({"_id": "album", "_attachments": {"a.jpg": inline(jpeg, "image/jpeg"),
                                              "notes.txt": inline(text, "text/plain")}})
    src.put(photo(2))
    src.bulk(notes(16, 26))
    src.put(photo(3))
    return atts


def change_source(src: Client, atts: dict[tuple[str, str], bytes]) -> None:
    """Edits after the resumed run: new docs, an edit, a deletion, an edit of a doc with an
    attachment (stub kept), a new attachment next to an old one, a new conflict, a deleted leaf."""
    src.bulk([{"_id": f"late-{i}", "x": i} for i in range(4)])
    note1 = src.get("note-001").json()
    note1["text"] = "edited"
    src.put(note1)
    note2 = src.get("note-002").json()
    src.delete("note-002", note2["_rev"])
    p0 = src.get("photo-000").json()
    p0["caption"] = "edited"
    src.put(p0)
    p1 = src.get("photo-001").json()
    extra = attachment_bytes(7, 120_000)
    atts[("photo-001", "extra.bin")] = extra
    p1["_attachments"]["extra.bin"] = inline(extra, "application/octet-stream")
    src.put(p1)
    n3 = src.get("note-003", "revs=true").json()
    first = n3["_revisions"]["ids"][-1]
    del n3["_revisions"]
    n3["text"] = "edited on one branch"
    src.put(n3)                # 2-<hash>, then a sibling 2-ffff on the same parent
    src.bulk([{"_id": "note-003", "_rev": "2-ffff", "branch": True,
               "_revisions": {"start": 2, "ids": ["ffff", first]}}], new_edits=False)
    src.delete("conflicted", "2-bbbb")


def open_revs_all(c: Client, doc_id: str) -> dict[str, dict]:
    resp = c.get(doc_id, "open_revs=all&revs=true", want=(200,))
    rows = json.loads(resp.content) if resp.headers.get("Content-Type", "").startswith("application/json") else None
    assert isinstance(rows, list), f"open_revs=all of {doc_id!r} on {c.ep.db} is not a JSON array: " \
                                   f"{resp.headers.get('Content-Type')} {resp.content[:200]!r}"
    out = {}
    for row in rows:
        assert "ok" in row, f"open_revs=all of {doc_id!r} lists a missing leaf: {row}"
        out[row["ok"]["_rev"]] = row["ok"]
    return out


def assert_identical(src: Client, tgt: Client, atts: dict[tuple[str, str], bytes]) -> None:
    s_info, t_info = src.info(), tgt.info()
    assert (s_info["doc_count"], s_info["doc_del_count"]) == (t_info["doc_count"], t_info["doc_del_count"])

    s_all = src.req("GET", "_all_docs").json()
    t_all = tgt.req("GET", "_all_docs").json()
    assert s_all["total_rows"] == t_all["total_rows"]
    assert s_all["rows"] == t_all["rows"]

    s_leaves, t_leaves = src.leaves(), tgt.leaves()
    assert sorted(s_leaves) == sorted(t_leaves), "different ids in _changes"
    for doc_id in s_leaves:
        assert s_leaves[doc_id] == t_leaves[doc_id], f"leaves of {doc_id!r} differ"

    for doc_id in sorted(s_leaves):
        s_docs, t_docs = open_revs_all(src, doc_id), open_revs_all(tgt, doc_id)
        assert s_docs == t_docs, f"open_revs=all&revs=true of {doc_id!r} differs"
        for rev, doc in s_docs.items():
            for name, stub in (doc.get("_attachments") or {}).items():
                path = f"{doc_path(doc_id)}/{urllib.parse.quote(name, safe='')}?rev={rev}"
                s_bytes = src.req("GET", path).content
                t_bytes = tgt.req("GET", path).content
                assert len(t_bytes) == stub["length"], f"{doc_id}/{name}@{rev}: length"
                assert t_bytes == s_bytes, f"{doc_id}/{name}@{rev}: bytes differ"
                if (doc_id, name) in atts:
                    assert t_bytes == atts[(doc_id, name)], f"{doc_id}/{name}@{rev}: not the seeded bytes"
        s_w = src.get(doc_id, "conflicts=true&deleted_conflicts=true", want=(200, 404))
        t_w = tgt.get(doc_id, "conflicts=true&deleted_conflicts=true", want=(200, 404))
        assert s_w.status_code == t_w.status_code, f"winner of {doc_id!r}: {s_w.status_code} vs {t_w.status_code}"
        if s_w.status_code == 200:
            s_doc, t_doc = s_w.json(), t_w.json()
            assert s_doc["_rev"] == t_doc["_rev"], f"winner of {doc_id!r} differs"
            for key in ("_conflicts", "_deleted_conflicts"):
                assert sorted(s_doc.get(key, [])) == sorted(t_doc.get(key, [])), f"{key} of {doc_id!r}"


def assert_expected_shape(tgt: Client) -> None:
    """Guards against two equal but wrong databases (e.g. both empty)."""
    edited = tgt.get("edited", "revs=true").json()
    assert edited["v"] == 3 and len(edited["_revisions"]["ids"]) == 3
    c = tgt.get("conflicted", "conflicts=true&deleted_conflicts=true").json()
    assert c["_rev"] == "2-aaaa" and c.get("_deleted_conflicts"), c
    n3 = tgt.get("note-003", "conflicts=true").json()
    assert n3.get("_conflicts"), n3
    assert tgt.get("gone", want=(404,)).json()["reason"] == "deleted"
    assert tgt.get("note-002", want=(404,)).json()["reason"] == "deleted"
    for doc_id in WEIRD_IDS + ["_design/app", "late-3"]:
        tgt.get(doc_id)
    album = tgt.get("album").json()["_attachments"]
    assert album["notes.txt"]["length"] == 2200 and album["a.jpg"]["length"] == 50_013
    p1 = tgt.get("photo-001").json()["_attachments"]
    assert set(p1) == {"photo.jpg", "extra.bin"}


def test_replication_survives_target_kill_and_resumes_from_checkpoint(servers):
    a = servers("source")
    b = servers("target")
    src, tgt = Client(a.url, SOURCE_DB), Client(b.url, TARGET_DB)
    src.create()
    tgt.create()
    atts = seed_source(src)
    total_changes = len(src.leaves())

    def replicator() -> Replicator:
        return Replicator(Endpoint(a.url, SOURCE_DB), Endpoint(b.url, TARGET_DB),
                          replication_id=REPLICATION_ID, batch_size=BATCH_SIZE,
                          checkpoint_every=CHECKPOINT_EVERY)

    # 1. Part of the way: 3 batches, checkpoint after the 2nd, then the "crash".
    first = replicator().run(max_batches=FIRST_RUN_BATCHES)
    print("first run:", first)
    assert not first.completed and first.batches == FIRST_RUN_BATCHES
    assert first.checkpoints == 1
    assert first.multipart_puts >= 1, "no doc with attachments in the first batches"
    checkpoint = src.get(f"_local/{REPLICATION_ID}").json()
    tgt_checkpoint = tgt.get(f"_local/{REPLICATION_ID}").json()
    assert (checkpoint["session_id"], checkpoint["source_last_seq"]) == \
        (tgt_checkpoint["session_id"], tgt_checkpoint["source_last_seq"])
    assert checkpoint["source_last_seq"] != 0
    saved_seq = checkpoint["source_last_seq"]

    # 2. The target dies without any shutdown code and comes back on the same data dir.
    b.kill(signal.SIGKILL)
    b.start()
    after_kill = tgt.get(f"_local/{REPLICATION_ID}").json()
    assert after_kill["source_last_seq"] == saved_seq, "target lost its checkpoint in the kill"

    second = replicator().run()
    print("resumed run:", second)
    assert second.completed
    assert second.start_seq == saved_seq and second.changes_since[0] == saved_seq, \
        f"resumed from {second.start_seq!r}, checkpoint said {saved_seq!r}"
    assert second.missing_checked < total_changes, "the resumed run re-read every change"
    assert second.missing_found < second.missing_checked, \
        "the batch written before the kill (after the checkpoint) was missing again"
    assert second.docs_written < total_changes

    # 3. More changes on the source, then an incremental run from the new checkpoint.
    change_source(src, atts)
    third = replicator().run()
    print("incremental run:", third)
    assert third.completed and third.start_seq == second.end_seq
    assert third.json_puts >= 1, "photo-000's edit (attachment as stub) was not a JSON PUT"
    assert third.multipart_puts >= 1

    assert_identical(src, tgt, atts)
    assert_expected_shape(tgt)
