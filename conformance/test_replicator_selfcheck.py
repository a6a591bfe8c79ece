"""Server-less checks of replicator.py against the recorded CouchDB 3.4.3 conversations: the
multipart PUTs it builds must be byte-identical to the ones CouchDB's replicator sent, and the
multipart/mixed `open_revs` answers CouchDB gave must parse into those same PUTs."""

from __future__ import annotations

import base64
import json
import os

import pytest

from replicator import (Attachment, Replicator, ReplicationError, boundary_of,
                        build_multipart_related, doc_path, media_type, parse_multipart, seq_param)

TRANSCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "transcripts")


def load(name: str) -> list[dict]:
    path = os.path.join(TRANSCRIPTS, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} not found")
    with open(path) as f:
        return [json.loads(line) for line in f]


def body(part: dict) -> bytes:
    return part["text"].encode() if "text" in part else base64.b64decode(part["base64"])


def multipart_puts(entries: list[dict]) -> list[dict]:
    return [e for e in entries if e["method"] == "PUT" and "new_edits=false" in e["path"]
            and media_type(e["req_headers"].get("Content-Type")) == "multipart/related"]


def open_revs_answers(entries: list[dict]) -> list[dict]:
    return [e for e in entries if e["method"] == "GET" and "open_revs=" in e["path"]]


def test_multipart_put_bodies_are_byte_identical_to_couchdb_replicator():
    puts = multipart_puts(load("couchdb-3.4.3-push.jsonl"))
    assert len(puts) >= 5
    for e in puts:
        recorded = body(e["req_body"])
        boundary = boundary_of(e["req_headers"]["Content-Type"])
        parts = parse_multipart(recorded, boundary)
        doc = json.loads(parts[0].body)
        follows = [n for n, a in doc["_attachments"].items() if a.get("follows")]
        atts = [Attachment(n, doc["_attachments"][n], p.body) for n, p in zip(follows, parts[1:])]
        ctype, built = build_multipart_related(doc, atts, boundary)
        assert ctype == e["req_headers"]["Content-Type"], e["path"]
        assert built == recorded, e["path"]


def test_open_revs_answers_parse_into_the_puts_couchdb_sent():
    puts = {e["path"].split("?")[0].rsplit("/", 1)[1]: e for e in multipart_puts(load("couchdb-3.4.3-push.jsonl"))}
    compared = 0
    for e in open_revs_answers(load("couchdb-3.4.3-pull.jsonl")):
        ctype = e["resp_headers"]["Content-Type"]
        assert media_type(ctype) == "multipart/mixed"
        for part in parse_multipart(body(e["resp_body"]), boundary_of(ctype)):
            ptype = part.headers["content-type"]
            if media_type(ptype) != "multipart/related":
                assert ptype == "application/json"
                continue
            doc, atts = Replicator.related_doc(part.body, boundary_of(ptype), e["path"])
            put = puts.get(doc["_id"])
            if put is None or put["path"].find("new_edits") < 0:
                continue
            recorded = body(put["req_body"])
            if json.loads(parse_multipart(recorded, boundary_of(put["req_headers"]["Content-Type"]))[0].body)["_rev"] != doc["_rev"]:
                continue   # edited between the push and the pull
            _, built = build_multipart_related(doc, atts, boundary_of(put["req_headers"]["Content-Type"]))
            assert built == recorded, doc["_id"]
            compared += 1
    assert compared >= 3


def test_parse_multipart_slices_by_content_length_even_if_bytes_hold_the_delimiter():
    payload = b"\r\n--B\r\nnot a part"
    msg = (b"--B\r\nContent-Type: application/json\r\n\r\n{}\r\n--B\r\nContent-Length: "
           + str(len(payload)).encode() + b"\r\n\r\n" + payload + b"\r\n--B--")
    parts = parse_multipart(msg, "B")
    assert [p.body for p in parts] == [b"{}", payload]


def test_parse_multipart_rejects_a_content_length_that_overruns_the_part():
    msg = b"--B\r\nContent-Length: 99\r\n\r\nshort\r\n--B--"
    with pytest.raises(ReplicationError):
        parse_multipart(msg, "B")


def test_related_doc_rejects_missing_attachment_part():
    doc = {"_id": "d", "_rev": "1-a", "_attachments": {"x": {"follows": True, "length": 3}}}
    msg = b"--R\r\nContent-Type: application/json\r\n\r\n" + json.dumps(doc).encode() + b"\r\n--R--"
    with pytest.raises(ReplicationError):
        Replicator.related_doc(msg, "R", "d")


def test_doc_path_keeps_design_slash_and_encodes_the_rest():
    assert doc_path("_design/app") == "_design/app"
    assert doc_path("weird/id with é") == "weird%2Fid%20with%20%C3%A9"
    assert doc_path("_local/x/y") == "_local/x%2Fy"
    assert doc_path("_designer") == "_designer"


def test_since_is_verbatim_for_strings_and_json_otherwise():
    assert seq_param("34-g1AAAA_x") == "34-g1AAAA_x"
    assert seq_param(0) == "0"
    assert seq_param([1, "a"]) == '[1, "a"]'


@pytest.mark.parametrize("src,tgt,want", [
    (None, None, 0),
    ({"session_id": "s1", "source_last_seq": "9-x", "history": []}, None, 0),
    ({"session_id": "s1", "source_last_seq": "9-x", "history": []},
     {"session_id": "s1", "source_last_seq": "9-x", "history": []}, "9-x"),
    # the source got the newer checkpoint, the target did not: the shared older session wins
    ({"session_id": "s2", "source_last_seq": "9-x",
      "history": [{"session_id": "s2", "recorded_seq": "9-x"}, {"session_id": "s1", "recorded_seq": "5-x"}]},
     {"session_id": "s1", "source_last_seq": "5-x", "history": [{"session_id": "s1", "recorded_seq": "5-x"}]},
     "5-x"),
    ({"session_id": "s2", "history": [{"session_id": "s2", "recorded_seq": 9}]},
     {"session_id": "s3", "history": [{"session_id": "s3", "recorded_seq": 4}]}, 0),
])
def test_checkpoint_comparison_follows_couchdb(src, tgt, want):
    assert Replicator.compare_checkpoints(src, tgt) == want


class _Canned:
    """A stand-in for requests.Response."""

    def __init__(self, status: int, obj):
        self.status_code = status
        self._obj = obj
        self.text = json.dumps(obj)
        self.content = self.text.encode()

    def json(self):
        return self._obj


class _RecordingEndpoint:
    """Answers like a CouchDB that holds checkpoint `0-1`, and records what was sent."""

    def __init__(self, role: str):
        self.role = role
        self.db = role
        self.sent: list[tuple[str, str, dict | None]] = []

    def request(self, method, path, *, body=None, json_body=None, headers=None):
        self.sent.append((method, path, json.loads(json.dumps(json_body))))  # a copy: the caller reuses it
        if path == "_ensure_full_commit":
            return _Canned(201, {"ok": True, "instance_start_time": "0"})
        return _Canned(201, {"ok": True, "id": path, "rev": "0-2"})

    def json(self, method, path, expect, **kw):
        return self.request(method, path, **kw).json()


def test_checkpoint_put_has_the_shape_couchdb_replicator_sends():
    recorded = [e for e in load("couchdb-3.4.3-push-incremental.jsonl")
                if e["method"] == "PUT" and "/_local/" in e["path"]][0]
    want = json.loads(body(recorded["req_body"]))
    rep = Replicator.__new__(Replicator)
    rep.source, rep.target = _RecordingEndpoint("source"), _RecordingEndpoint("target")
    rep.replication_id = "9bc1a8108eb4866eb880a5802455bff6"
    old = {"_id": "_local/" + rep.replication_id, "_rev": "0-1", "session_id": "s1",
           "source_last_seq": "5", "history": [{"session_id": "s1", "recorded_seq": "5"}]}
    rep._logs = {"source": dict(old), "target": dict(old)}
    rep._start_time = "Sun, 29 Nov 2026 13:14:00 GMT"
    from replicator import RunStats
    rep.checkpoint("9", RunStats(session_id="s2", start_seq="5"))
    for ep in (rep.source, rep.target):
        assert [(m, p) for m, p, _ in ep.sent] == [("POST", "_ensure_full_commit"), ("PUT", "_local/" + rep.replication_id)]
        sent = ep.sent[1][2]
        assert list(sent) == list(want)            # same keys in the same order
        assert sent["_rev"] == "0-1" and sent["_revisions"] == {"start": 0, "ids": ["1"]}
        assert list(sent["history"][0]) == list(want["history"][0])
        assert [h["session_id"] for h in sent["history"]] == ["s2", "s1"]
    assert rep._logs["target"]["_rev"] == "0-2"
