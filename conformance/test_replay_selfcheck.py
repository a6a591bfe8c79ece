"""Self-check of the replay harness, without a server.

A fake server answers every request with the recorded answer, rewritten the way any other
server would differ from CouchDB: other sequences, other revision hashes for the revisions the
server made itself, another uuid, instance_start_time and database name. It also checks each
request it receives: mapped back, it must equal the recorded request. A correct harness then
reports zero differences; the negative tests prove it reports real ones.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import urllib.parse

import pytest

import replay
from replay import Entry, Replayer, Response

# CouchDB's sequences, and couchlite's (N- and 11 base64url characters) in the transcripts recorded against it.
SEQ_RE = re.compile(r"\b\d+-(g1A[A-Za-z0-9_\-]+|[A-Za-z0-9_\-]{11}\b)")
INSTANCE_RE = re.compile(r'"instance_start_time":"(\d+)"')
CREDENTIALS = ("tester", "s3cret")


def server_made_revs(entries: list[Entry]) -> set[str]:
    """Revisions CouchDB generated: in a harness write's answer, absent from its request."""
    made = set()
    for e in entries:
        if not e.is_harness or e.method not in ("PUT", "POST", "DELETE"):
            continue
        try:
            body = json.loads(e.resp_body)
        except ValueError:
            continue
        rev = body.get("rev") if isinstance(body, dict) else None
        if isinstance(rev, str) and not rev.startswith("0-") and rev not in e.path + e.req_body.decode("utf-8", "replace"):
            made.add(rev)
    return made


def server_made_seqs(entries: list[Entry]) -> set[str]:
    """Sequences the server itself answered with (database info and _changes), not client data."""
    seqs = set()
    for e in entries:
        try:
            body = json.loads(e.resp_body)
        except ValueError:
            continue
        if not isinstance(body, dict):
            continue
        if "db_name" in body or "results" in body:
            seqs.update(v for k, v in body.items() if k in replay.SEQ_KEYS and isinstance(v, str))
            for row in body.get("results") or []:
                if isinstance(row, dict) and isinstance(row.get("seq"), str):
                    seqs.add(row["seq"])
    return seqs


class FakeServer:
    """Answers with the recordings, rewritten as a different (but correct) server would."""

    def __init__(self, entries: list[Entry], db_name: str, mutate=None):
        self.entries = entries
        self.answered = 0
        self.lock = threading.Lock()
        self.db_name = db_name
        self.old_db = replay.db_name_of(entries)
        self.mutate = mutate
        self.request_mismatches: list[str] = []
        self.forward: dict[str, str] = {}
        seqs = server_made_seqs(entries)
        for n, s in enumerate(sorted(seqs)):
            self.forward[s] = f"fs{n:04d}-{hashlib.md5(s.encode()).hexdigest()[:10]}"
        for rev in server_made_revs(entries):
            h = rev.partition("-")[2]
            self.forward[h] = hashlib.md5(("fake" + h).encode()).hexdigest()
        self.forward["5c1b2f0e9a7d4a7e8b3c6d1e2f3a4b5c"] = "0123456789abcdef0123456789abcdef"
        self.backward = {v: k for k, v in self.forward.items()}

    def rewrite(self, text: str, table: dict) -> str:
        for k in sorted(table, key=len, reverse=True):
            text = text.replace(k, table[k])
        return text

    def __call__(self, method, path, headers, body, timeout, entry) -> Response:
        with self.lock:
            self.answered += 1
        self.check_request(entry, method, path, headers, body)
        resp_body = entry.resp_body
        ctype = replay.header(entry.resp_headers, "content-type") or ""
        if replay.media_type(ctype) == "application/json":
            text = self.rewrite(resp_body.decode("utf-8"), self.forward)
            text = INSTANCE_RE.sub('"instance_start_time":"1600000000"', text)
            text = text.replace(f'"db_name":"{self.old_db}"', f'"db_name":"{self.db_name}"')
            resp_body = text.encode("utf-8")
        elif replay.media_type(ctype).startswith("multipart/"):
            for k, v in self.forward.items():
                resp_body = resp_body.replace(k.encode(), v.encode())
        resp = Response(entry.status, dict(entry.resp_headers), resp_body)
        if self.mutate:
            resp = self.mutate(entry, resp)
        return resp

    def check_request(self, entry: Entry, method, path, headers, body) -> None:
        where = entry.describe()
        if method != entry.method:
            self.request_mismatches.append(f"{where}: method {method}")
        back = self.rewrite(urllib.parse.unquote(path), self.backward)
        back = back.replace(f"/{self.db_name}", f"/{self.old_db}", 1)
        if back != urllib.parse.unquote(entry.path):
            self.request_mismatches.append(f"{where}: path {back!r} != {entry.path!r}")
        ctype = replay.media_type(replay.header(entry.req_headers, "content-type"))
        if ctype == "application/x-www-form-urlencoded":
            form = dict(urllib.parse.parse_qsl(body.decode()))
            if (form.get("name"), form.get("password")) != CREDENTIALS:
                self.request_mismatches.append(f"{where}: form {form}")
            return
        if ctype.startswith("multipart/"):
            restored = body
            for k, v in self.backward.items():
                restored = restored.replace(k.encode(), v.encode())
            if restored != entry.req_body:
                self.request_mismatches.append(f"{where}: multipart body differs")
            return
        if not entry.req_body:
            if body:
                self.request_mismatches.append(f"{where}: unexpected body")
            return
        try:
            want = json.loads(entry.req_body)
        except ValueError:
            if body != entry.req_body:
                self.request_mismatches.append(f"{where}: body differs")
            return
        got = json.loads(self.rewrite(body.decode("utf-8"), self.backward))
        if got != want:
            self.request_mismatches.append(f"{where}: JSON body {str(got)[:300]} != {str(want)[:300]}")


def run_fake(path: str, mutate=None):
    entries = []
    for p in replay.replay_chain(path):
        entries.extend(replay.load_transcript(p))
    fake = FakeServer(entries, "selfcheck-db", mutate)
    rp = Replayer(fake, "selfcheck-db", CREDENTIALS)
    for p in replay.replay_chain(path):
        rp.replay(replay.load_transcript(p))
    assert fake.answered == len(entries)
    return rp, fake


def test_transcripts_present():
    files = replay.transcript_files()
    assert len(files) >= 8, f"expected the 8 transcripts in {replay.TRANSCRIPT_DIR}, found {files}"


@pytest.mark.parametrize("path", replay.transcript_files(), ids=os.path.basename)
def test_replay_against_recordings_finds_no_difference(path):
    rp, fake = run_fake(path)
    assert not fake.request_mismatches, "requests not mapped back to the recorded ones:\n" + \
        "\n".join(fake.request_mismatches[:20])
    assert not rp.diffs, "differences against the recordings themselves:\n" + "\n".join(rp.diffs[:20])
    # The mapping must have been exercised, not sidestepped.
    assert any(isinstance(k, str) and SEQ_RE.fullmatch(k) for k in rp.values), "no sequence was mapped"


def test_server_made_revisions_are_mapped():
    path = os.path.join(replay.TRANSCRIPT_DIR, "pouchdb-9.0.0-conflict.jsonl")
    rp, fake = run_fake(path)
    assert rp.learned_revs, "the harness's own writes must yield mapped revisions"
    assert all(re.fullmatch(r"\d+-[0-9a-f]{32}", r) for r in rp.learned_revs)
    assert not fake.request_mismatches


def _first(entries_pred):
    hit = {"done": False}

    def mutate(entry, resp):
        if not hit["done"] and entries_pred(entry):
            hit["done"] = True
            return entries_pred.change(resp)
        return resp
    return mutate, hit


def test_changed_document_value_is_reported():
    def pred(e):
        return e.method == "POST" and "_bulk_get" in e.path
    pred.change = lambda r: Response(r.status, r.headers, r.body.replace(b'"hello 3"', b'"hello X"', 1))
    mutate, hit = _first(pred)
    rp, _ = run_fake(os.path.join(replay.TRANSCRIPT_DIR, "couchdb-3.4.3-pull.jsonl"), mutate)
    assert hit["done"]
    assert any("hello X" in d for d in rp.diffs), rp.diffs[:5]


def test_changed_status_is_reported():
    def pred(e):
        return e.method == "POST" and "_revs_diff" in e.path
    pred.change = lambda r: Response(500, r.headers, b'{"error":"unknown_error","reason":"x"}')
    mutate, hit = _first(pred)
    rp, _ = run_fake(os.path.join(replay.TRANSCRIPT_DIR, "pouchdb-9.0.0-push-photos.jsonl"), mutate)
    assert hit["done"] and any("status 500" in d for d in rp.diffs), rp.diffs[:5]


def test_changed_attachment_bytes_are_reported():
    def pred(e):
        return e.method == "GET" and "open_revs" in e.path and "photo-00" in e.path
    def change(r):
        body = bytearray(r.body)
        body[len(body) // 2] ^= 0xFF
        return Response(r.status, r.headers, bytes(body))
    pred.change = change
    mutate, hit = _first(pred)
    rp, _ = run_fake(os.path.join(replay.TRANSCRIPT_DIR, "couchdb-3.4.3-pull.jsonl"), mutate)
    assert hit["done"] and any("bytes differ" in d for d in rp.diffs), rp.diffs[:5]


def test_missing_key_and_wrong_seq_use_are_reported():
    # An answer that drops `pending` and a _changes whose rows lack their seq.
    def pred(e):
        return e.method == "GET" and "_changes" in e.path and "limit=100" in e.path
    pred.change = lambda r: Response(r.status, r.headers, r.body.replace(b',"pending":0', b""))
    mutate, hit = _first(pred)
    rp, _ = run_fake(os.path.join(replay.TRANSCRIPT_DIR, "pouchdb-9.0.0-pull.jsonl"), mutate)
    assert hit["done"] and any("pending" in d for d in rp.diffs), rp.diffs[:5]


def test_multipart_parser_whole_and_nested():
    body = (b"--A\r\nContent-Type: multipart/related; boundary=\"B\"\r\n\r\n"
            b"--B\r\nContent-Type: application/json\r\n\r\n{\"_id\":\"x\"}\r\n"
            b"--B\r\nContent-Disposition: attachment; filename=\"f\"\r\nContent-Type: text/plain\r\n\r\n"
            b"hi\r\n--B--\r\n--A--")
    parts = replay.parse_multipart(body, "A")
    assert len(parts) == 1 and parts[0].children is not None
    assert [p.body for p in parts[0].children] == [b'{"_id":"x"}', b"hi"]
