"""couchlite's own replicator (issue 13) between couchlite servers: `POST /_replicate` and
`couchlite replicate` push and pull the reference mix exactly, re-runs write only what changed,
a killed target or a killed replicator resumes from the checkpoint, continuous replication follows
the source, and a source without `_bulk_get` is read with `open_revs`.

The seed data and the comparison are test_replication_e2e.py's (notes, photos, an album with two
attachments, a 3-revision doc, a deleted doc, a conflicted doc, a design doc, ids with `/`, spaces
and unicode).
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import threading
import time

import requests

from test_replication_e2e import Client, assert_expected_shape, assert_identical, change_source, seed_source

TIMEOUT_S = 120


def replicate(server, body: dict, timeout: float = TIMEOUT_S) -> requests.Response:
    return requests.post(f"{server.url}/_replicate", json=body, timeout=timeout)


def plain_url(server, db: str) -> str:
    return f"{server.url}/{db}"


def test_push_and_pull_reference_mix_then_incremental(servers):
    a = servers("a")
    b = servers("b")
    src = Client(a.url, "photos")
    src.create()
    atts = seed_source(src)
    total = len(src.leaves())

    # Push: a local database of `a` into `b`, created on the way.
    resp = replicate(a, {"source": "photos", "target": plain_url(b, "photos"), "create_target": True})
    assert resp.status_code == 200, resp.text
    push = resp.json()
    assert push["ok"] is True and push["history"][0]["session_id"] == push["session_id"]
    first = push["history"][0]
    assert first["docs_written"] == first["missing_found"] >= total, first
    assert first["doc_write_failures"] == 0
    tgt = Client(b.url, "photos")
    assert_identical(src, tgt, atts)
    assert tgt.get("conflicted", "conflicts=true").json()["_conflicts"] == ["2-aaaa"]

    assert push["source_last_seq"] not in (0, "0", None)

    # Nothing changed: a re-run writes nothing and says so.
    again = replicate(a, {"source": "photos", "target": plain_url(b, "photos")}).json()
    assert again.get("no_changes") is True, again
    assert again["history"][0]["docs_written"] == 0

    # Incremental: only what changed is checked and written.
    change_source(src, atts)
    changed = replicate(a, {"source": "photos", "target": plain_url(b, "photos")}).json()
    entry = changed["history"][0]
    assert entry["start_last_seq"] == push["source_last_seq"], entry
    assert 0 < entry["docs_written"] < total, entry
    assert entry["missing_checked"] < total, entry
    assert_identical(src, tgt, atts)
    assert_expected_shape(tgt)

    # With credentials the replicator logs in once and then sends the cookie, as CouchDB's does.
    with open(b.log_path, encoding="utf-8", errors="replace") as log:
        sessions = [line for line in log if "method=POST path=/_session" in line]
    assert sessions and all("status=200" in line for line in sessions), sessions
    assert len(sessions) == 3, sessions  # one per replication run so far

    # Pull: `b` (remote) into a new local database of `a`, run by `a`.
    resp = replicate(a, {"source": plain_url(b, "photos"), "target": "pulled", "create_target": True})
    assert resp.status_code == 200, resp.text
    assert_identical(tgt, Client(a.url, "pulled"), atts)

    # And the other way round: `b` pulls from `a` with the command line replicator.
    binary = os.environ["COUCHLITE_BIN"]
    out = subprocess.run(
        [binary, "replicate", plain_url(a, "photos"), plain_url(b, "cli-copy"), "--create-target"],
        capture_output=True, timeout=TIMEOUT_S)
    assert out.returncode == 0, out.stderr.decode()
    assert json.loads(out.stdout)["ok"] is True
    assert_identical(src, Client(b.url, "cli-copy"), atts)


def test_replicate_errors_are_couchdb_shaped(servers):
    a = servers("a")
    Client(a.url, "src").create()
    resp = replicate(a, {"source": "nosuch", "target": "x"})
    assert resp.status_code == 404 and resp.json()["error"] == "db_not_found", resp.text
    resp = replicate(a, {"source": "src"})
    assert resp.status_code == 400 and resp.json()["error"] == "bad_request", resp.text
    wrong = plain_url(a, "src").replace("admin:pass@", "admin:wrong@")
    resp = replicate(a, {"source": wrong, "target": "y", "create_target": True})
    assert resp.status_code == 401 and resp.json()["error"] == "unauthorized", resp.text
    anonymous = requests.post(f"http://127.0.0.1:{a.port}/_replicate", json={"source": "src", "target": "z"})
    assert anonymous.status_code == 401, anonymous.text


def seed_many(src: Client, notes: int, photos: int) -> None:
    for lo in range(0, notes, 500):
        src.bulk([{"_id": f"n-{i:05d}", "i": i, "text": "x" * 200} for i in range(lo, min(notes, lo + 500))])
    import base64
    import random
    for i in range(photos):
        data = random.Random(i).randbytes(150_000)
        src.put({"_id": f"p-{i:03d}", "_attachments": {
            "p.jpg": {"content_type": "image/jpeg", "data": base64.b64encode(data).decode()}}})


def test_target_killed_mid_push_is_resumed_not_restarted(servers):
    a = servers("a")
    b = servers("b")
    src = Client(a.url, "big")
    src.create()
    seed_many(src, 3000, 20)
    total = len(src.leaves())
    Client(b.url, "big").create()
    binary = os.environ["COUCHLITE_BIN"]
    proc = subprocess.Popen(
        [binary, "replicate", plain_url(a, "big"), plain_url(b, "big"), "--batch-size", "20",
         "--checkpoint-docs", "100"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    tgt = Client(b.url, "big")
    deadline = time.monotonic() + 60
    while tgt.info()["doc_count"] < 300 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the replication ended before the target could be killed"
    b.kill(signal.SIGKILL)
    time.sleep(0.3)
    b.start()
    out, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 0, err.decode()
    result = json.loads(out)
    entry = result["history"][0]
    # Retried in place: every document written once (plus at most the batch in flight at the kill).
    assert total <= entry["docs_written"] + entry["doc_write_failures"] <= total + 40, entry
    assert tgt.info()["doc_count"] == src.info()["doc_count"]
    assert_identical(src, tgt, {})


def test_replicator_killed_mid_push_resumes_from_checkpoint(servers):
    a = servers("a")
    b = servers("b")
    src = Client(a.url, "big")
    src.create()
    seed_many(src, 3000, 0)
    total = len(src.leaves())
    binary = os.environ["COUCHLITE_BIN"]
    args = [binary, "replicate", plain_url(a, "big"), plain_url(b, "big"), "--create-target",
            "--batch-size", "20", "--checkpoint-docs", "100"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first_line = proc.stderr.readline().decode()
    assert "(checkpoint _local/" in first_line, first_line
    checkpoint_id = first_line.rsplit("(checkpoint ", 1)[1].rstrip(")\n")
    tgt = Client(b.url, "big")
    deadline = time.monotonic() + 60
    checkpoint = None
    while time.monotonic() < deadline and proc.poll() is None:
        got = requests.get(f"{b.url}/big/{checkpoint_id}", timeout=5)
        if got.status_code == 200:
            checkpoint = got.json()
            if tgt.info()["doc_count"] >= 500:
                break
        time.sleep(0.02)
    assert proc.poll() is None, "the replication ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert checkpoint is not None, "no checkpoint on the target before the kill"
    assert set(checkpoint) >= {"session_id", "source_last_seq", "replication_id_version", "history"}, checkpoint
    assert set(checkpoint["history"][0]) >= {"session_id", "start_time", "end_time", "start_last_seq",
                                             "end_last_seq", "recorded_seq", "missing_checked", "missing_found",
                                             "docs_read", "docs_written", "doc_write_failures"}, checkpoint
    written_before = tgt.info()["doc_count"]
    out = subprocess.run(args, capture_output=True, timeout=TIMEOUT_S)
    assert out.returncode == 0, out.stderr.decode()
    entry = json.loads(out.stdout)["history"][0]
    assert entry["start_last_seq"] not in (0, "0"), entry
    assert entry["missing_checked"] < total, entry
    assert entry["docs_written"] <= total - written_before + 100, (entry, written_before)
    assert_identical(src, tgt, {})


def test_continuous_replication_picks_up_a_new_document_within_a_second(servers):
    a = servers("a")
    b = servers("b")
    Client(a.url, "live").create()
    resp = replicate(a, {"source": "live", "target": plain_url(b, "live"), "continuous": True,
                         "create_target": True})
    assert resp.status_code == 202, resp.text
    local_id = resp.json()["_local_id"]
    assert local_id.endswith("+continuous+create_target"), local_id
    tgt = Client(b.url, "live")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if requests.get(f"{b.url}/live", timeout=5).status_code == 200:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    tasks = requests.get(f"{a.url}/_active_tasks", timeout=5).json()
    assert [t["replication_id"] for t in tasks] == [local_id], tasks
    assert tasks[0]["type"] == "replication" and tasks[0]["continuous"] is True
    for i in range(3):
        Client(a.url, "live").put({"_id": f"new-{i}", "i": i})
        started = time.monotonic()
        while time.monotonic() - started < 1.0:
            if tgt.get(f"new-{i}", want=(200, 404)).status_code == 200:
                break
            time.sleep(0.02)
        else:
            raise AssertionError(f"new-{i} did not reach the target within a second")
    cancel = replicate(a, {"replication_id": local_id, "cancel": True})
    assert cancel.status_code == 200, cancel.text
    deadline = time.monotonic() + 5
    while requests.get(f"{a.url}/_active_tasks", timeout=5).json() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert requests.get(f"{a.url}/_active_tasks", timeout=5).json() == []
    assert replicate(a, {"replication_id": local_id, "cancel": True}).status_code == 404


class NoBulkGetProxy:
    """Forwards to a couchlite server but answers `_bulk_get` with 404, as Couchbase Lite 1.x does,
    and counts the `open_revs` reads it passes on."""

    def __init__(self, upstream_port: int):
        self.upstream = f"http://127.0.0.1:{upstream_port}"
        self.bulk_get_calls = 0
        self.open_revs_calls = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if "/_bulk_get" in self.path:
                    proxy.bulk_get_calls += 1
                    payload = b'{"error":"not_found","reason":"missing"}'
                    self.send_response(404)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if "open_revs=" in self.path:
                    proxy.open_revs_calls += 1
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                r = requests.request(self.command, proxy.upstream + self.path, data=body, headers=headers,
                                     timeout=60)
                content = r.content
                self.send_response(r.status_code)
                for k, v in r.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = handle_any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_open_revs_fallback_against_a_source_without_bulk_get(servers):
    a = servers("a")
    b = servers("b")
    src = Client(a.url, "photos")
    src.create()
    atts = seed_source(src)
    proxy = NoBulkGetProxy(a.port)
    try:
        source = f"http://admin:pass@127.0.0.1:{proxy.port}/photos"
        resp = replicate(b, {"source": source, "target": "photos", "create_target": True})
        assert resp.status_code == 200, resp.text
        entry = resp.json()["history"][0]
    finally:
        proxy.close()
    assert proxy.bulk_get_calls == 1, "_bulk_get was asked again after the source said it has none"
    assert proxy.open_revs_calls >= len(src.leaves()), proxy.open_revs_calls
    assert entry["bulk_get_docs"] == 0 and entry["docs_written"] >= len(src.leaves())
    tgt = Client(b.url, "photos")
    assert_identical(src, tgt, atts)
    assert tgt.get("edited", "revs=true").json()["_revisions"]["start"] == 3


def test_a_stub_the_target_cannot_resolve_makes_the_attachment_travel(servers):
    """The target has revision 1 of a document without the attachment the source's 1 has (a forged
    history): the source sends 2 with a stub (revpos 1 is an ancestor), the target answers 412
    missing_stub, and the replicator sends the document again with its attachment bytes."""
    import base64
    a = servers("a")
    b = servers("b")
    src, tgt = Client(a.url, "s"), Client(b.url, "t")
    src.create()
    tgt.create()
    data = b"attachment bytes " * 1000
    src.bulk([{"_id": "doc", "_rev": "1-aaaa", "_revisions": {"start": 1, "ids": ["aaaa"]},
               "_attachments": {"a.bin": {"content_type": "application/octet-stream",
                                          "data": base64.b64encode(data).decode()}}}], new_edits=False)
    one = src.get("doc").json()
    one["edited"] = True
    src.put(one)
    tgt.bulk([{"_id": "doc", "_rev": "1-aaaa", "_revisions": {"start": 1, "ids": ["aaaa"]}}], new_edits=False)
    resp = replicate(a, {"source": "s", "target": plain_url(b, "t")})
    assert resp.status_code == 200, resp.text
    entry = resp.json()["history"][0]
    assert entry["docs_written"] == 1 and entry["doc_write_failures"] == 0, entry
    got = tgt.get("doc").json()
    assert got["edited"] is True and got["_attachments"]["a.bin"]["length"] == len(data)
    assert requests.get(f"{b.url}/t/doc/a.bin", timeout=10).content == data
    with open(b.log_path, encoding="utf-8", errors="replace") as log:
        puts = [line for line in log if "method=PUT path=/t/doc?new_edits=false" in line]
    assert any("status=412" in line for line in puts) and "status=201" in puts[-1], puts


def test_replicate_shows_what_it_has_written_while_it_runs(servers, tmp_path):
    # Issue 36, item 4: `couchlite replicate` used to print nothing until it ended. Through a 1 MB/s link 3 MB of
    # photos take seconds: lines (stderr is a pipe: at most one every 10 s, the first after a second) count the
    # documents and bytes written, and the last figures come before the answer.
    import re

    from tcp_link import Link

    a = servers("a")
    b = servers("b")
    src = Client(a.url, "slow")
    src.create()
    seed_many(src, 100, 20)
    link = Link(b.port, rate=1_000_000)
    try:
        out = subprocess.run(
            [os.environ["COUCHLITE_BIN"], "replicate", plain_url(a, "slow"), f"http://admin:pass@127.0.0.1:{link.port}/slow",
             "--create-target", "--data-dir", str(tmp_path / "data")], capture_output=True, timeout=TIMEOUT_S)
    finally:
        link.close()
    err = out.stderr.decode()
    assert out.returncode == 0, err
    lines = [line for line in err.splitlines() if line.startswith("replicate: ")]
    assert len(lines) >= 2, err
    assert re.fullmatch(r"replicate: \d+ documents  [0-9.]+ [kM]?B  (-- B|[0-9.]+ [kM]?B)/s", lines[0]), lines
    final = re.fullmatch(r"replicate: (\d+) documents  ([0-9.]+) MB  [0-9.]+ [kM]?B/s  in \d+:\d\d", lines[-1])
    assert final and int(final.group(1)) == 120 and float(final.group(2)) >= 3.0, lines
    assert json.loads(out.stdout)["history"][0]["docs_written"] == 120
