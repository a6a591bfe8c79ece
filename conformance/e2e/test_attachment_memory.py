"""End-to-end attachment checks that need their own couchlite process: resident memory while
streaming big attachments, compaction's blob sweep, and a crash in the middle of an upload.

Needs COUCHLITE_BIN (path of a built couchlite). ATT_MEMORY_MIB sets the size of the big
attachment (default 96 MiB; BENCHMARKS.md (attachments) was measured by hand at 1024).

    COUCHLITE_BIN=$(swift build --show-bin-path)/couchlite \\
        python3 -m pytest conformance/e2e/test_attachment_memory.py -q
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import tempfile
import time
import uuid

import pytest
import requests

from conftest import Server

ATT_ADMIN = ("admin", "pass")
ATT_BIG_MIB = int(os.environ.get("ATT_MEMORY_MIB", "96"))
ATT_RSS_BUDGET_MIB = 64  # the bound on extra resident memory while streaming
ATT_CHUNK = 1024 * 1024


class AttServer(Server):
    """A couchlite process with its own data dir."""

    def __init__(self, binary: str, root: str):
        super().__init__(binary, "att", root)
        self.base = f"http://127.0.0.1:{self.port}"
        self.session = requests.Session()
        self.session.auth = ATT_ADMIN

    def status(self, field: str) -> int:
        """A /proc/<pid>/status figure in KiB (VmRSS, VmHWM)."""
        return self.status_kib(field)

    def blob_dir(self, db: str) -> str:
        return os.path.join(self.data_dir, "attachments", db.encode().hex())

    def blob_files(self, db: str) -> list[str]:
        root = self.blob_dir(db)
        found = []
        for fan in os.listdir(root):
            if len(fan) == 2:
                found += [os.path.join(root, fan, n) for n in os.listdir(os.path.join(root, fan))]
        return found


@pytest.fixture
def att_server():
    binary = os.environ.get("COUCHLITE_BIN", "")
    if not binary:
        pytest.skip("COUCHLITE_BIN is not set")
    with tempfile.TemporaryDirectory(prefix="att-e2e-") as root:
        server = AttServer(binary, root)
        server.start()
        try:
            yield server
        finally:
            server.stop()


def att_pattern(total: int):
    """The md5 of `att_chunks(total)`."""
    md5 = hashlib.md5()
    for block in att_chunks(total):
        md5.update(block)
    return md5


def att_chunks(total: int):
    """`total` bytes in 1 MiB chunks, no two alike."""
    for i in range(0, total, ATT_CHUNK):
        block = hashlib.sha256(str(i).encode()).digest() * (ATT_CHUNK // 32)
        yield block[:min(ATT_CHUNK, total - i)]


class AttBody:
    """A streamed request body with a known length (requests sends Content-Length, no chunking)."""

    def __init__(self, pieces, length):
        self.pieces = pieces
        self.length = length

    def __len__(self):
        return self.length

    def __iter__(self):
        return iter(self.pieces)


def att_rss_mib(server, field="VmHWM") -> float:
    return server.status(field) / 1024


def test_big_standalone_and_multipart_attachments_stream_in_bounded_memory(att_server):
    s = att_server
    total = ATT_BIG_MIB * 1024 * 1024
    db = "att-mem"
    assert s.session.put(f"{s.base}/{db}").status_code == 201
    assert s.session.put(f"{s.base}/{db}/warm", json={"x": 1}).status_code == 201
    s.session.get(f"{s.base}/{db}/warm")
    baseline = att_rss_mib(s, "VmRSS")
    digest = "md5-" + base64.b64encode(att_pattern(total).digest()).decode()

    # Standalone PUT with Content-Length.
    r = s.session.put(f"{s.base}/{db}/big/file.bin", data=AttBody(att_chunks(total), total),
                      headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201, r.text
    meta = s.session.get(f"{s.base}/{db}/big").json()["_attachments"]["file.bin"]
    assert meta["length"] == total and meta["digest"] == digest
    after_put = att_rss_mib(s)

    # multipart/related PUT as the CouchDB replicator sends it.
    boundary = uuid.uuid4().hex
    doc = {"_id": "mp", "_rev": "1-aa", "_revisions": {"start": 1, "ids": ["aa"]},
           "_attachments": {"v.bin": {"content_type": "application/octet-stream", "revpos": 1, "digest": digest,
                                      "length": total, "follows": True}}}
    head = (f"--{boundary}\r\nContent-Type: application/json\r\n\r\n{json.dumps(doc)}\r\n--{boundary}\r\n"
            f"Content-Disposition: attachment; filename=\"v.bin\"\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Length: {total}\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--".encode()
    pieces = [head, *att_chunks(total), tail]
    r = s.session.put(f"{s.base}/{db}/mp?new_edits=false", data=AttBody(iter(pieces), len(head) + total + len(tail)),
                      headers={"Content-Type": f'multipart/related; boundary="{boundary}"'})
    assert r.status_code == 201, r.text
    after_multipart = att_rss_mib(s)

    # Streamed GET, checked by md5.
    md5 = hashlib.md5()
    with s.session.get(f"{s.base}/{db}/mp/v.bin", stream=True, headers={"Accept-Encoding": "identity"}) as g:
        assert g.status_code == 200
        for piece in g.iter_content(ATT_CHUNK):
            md5.update(piece)
    assert "md5-" + base64.b64encode(md5.digest()).decode() == digest
    after_get = att_rss_mib(s)

    # Both uploads are one blob (content-addressed).
    assert len(s.blob_files(db)) == 1
    print(f"\nbaseline RSS {baseline:.1f} MiB; peak after PUT {after_put:.1f}, multipart PUT {after_multipart:.1f}, GET {after_get:.1f} MiB")
    for label, peak in [("PUT", after_put), ("multipart PUT", after_multipart), ("GET", after_get)]:
        assert peak - baseline < ATT_RSS_BUDGET_MIB, \
            f"{label} of {ATT_BIG_MIB} MiB raised peak RSS from {baseline:.1f} to {peak:.1f} MiB"


def att_age_blobs(server, db, seconds=7200):
    past = time.time() - seconds
    for path in server.blob_files(db):
        os.utime(path, (past, past))


def att_compact(server, db):
    r = server.session.post(f"{server.base}/{db}/_compact", json={})
    assert r.status_code == 202
    time.sleep(0.5)  # compaction runs in the background


def test_compaction_removes_unreferenced_blobs_only(att_server):
    s = att_server
    db = "att-compact"
    assert s.session.put(f"{s.base}/{db}").status_code == 201
    rev1 = s.session.put(f"{s.base}/{db}/d/a", data=b"first version",
                         headers={"Content-Type": "application/octet-stream"}).json()["rev"]
    s.session.put(f"{s.base}/{db}/d/a?rev={rev1}", data=b"second version",
                  headers={"Content-Type": "application/octet-stream"})
    # The same bytes in another doc: one blob serves both.
    s.session.put(f"{s.base}/{db}/e/b", data=b"second version", headers={"Content-Type": "text/plain"})
    assert len(s.blob_files(db)) == 2

    # Fresh blobs are inside the grace window: compaction drops the old revision's row but keeps
    # every blob (an upload may be committed and its revision not yet written).
    att_compact(s, db)
    assert len(s.blob_files(db)) == 2

    att_age_blobs(s, db)
    att_compact(s, db)
    assert len(s.blob_files(db)) == 1
    g = s.session.get(f"{s.base}/{db}/d/a", headers={"Accept-Encoding": "identity"})
    assert g.status_code == 200 and g.content == b"second version"
    assert s.session.get(f"{s.base}/{db}/e/b").content == b"second version"


def att_wait_until_empty(directory, timeout=30.0):
    deadline = time.monotonic() + timeout
    while os.listdir(directory) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert os.listdir(directory) == [], f"{directory} still holds {os.listdir(directory)}"


def test_deleting_a_database_frees_its_name_at_once_and_its_blobs_in_the_background(att_server):
    s = att_server
    db = "att-trashed"
    assert s.session.put(f"{s.base}/{db}").status_code == 201
    for i in range(40):
        r = s.session.put(f"{s.base}/{db}/p{i}/photo.jpg", data=f"photo {i}".encode() * 100,
                          headers={"Content-Type": "image/jpeg"})
        assert r.status_code == 201, r.text
    assert len(s.blob_files(db)) == 40
    assert s.session.delete(f"{s.base}/{db}").json() == {"ok": True}
    # When the DELETE answers, the database's blob folder is gone (moved to the trash, not yet unlinked file by
    # file: on a disk mounted with discard that took minutes for a photo album).
    assert not os.path.exists(s.blob_dir(db))
    # Created again under the name, the database is empty: none of the old photos is served.
    assert s.session.put(f"{s.base}/{db}").status_code == 201
    assert s.session.get(f"{s.base}/{db}/p0/photo.jpg").status_code == 404
    r = s.session.put(f"{s.base}/{db}/p0/photo.jpg", data=b"a new photo", headers={"Content-Type": "image/jpeg"})
    assert r.status_code == 201
    trash = os.path.join(s.data_dir, "attachments", ".trash")
    assert os.stat(trash).st_mode & 0o077 == 0, oct(os.stat(trash).st_mode)  # owner-only, like the data
    att_wait_until_empty(trash)
    assert s.session.get(f"{s.base}/{db}/p0/photo.jpg").content == b"a new photo"


def test_what_a_stopped_server_left_in_the_trash_is_removed_when_it_starts(att_server):
    s = att_server
    s.stop()
    left = os.path.join(s.data_dir, "attachments", ".trash", "0123456789abcdef", "ab")
    os.makedirs(left)
    with open(os.path.join(left, "ab" + "0" * 30), "wb") as f:
        f.write(b"a photo of a database deleted just before the stop")
    s.start()
    att_wait_until_empty(os.path.join(s.data_dir, "attachments", ".trash"))
    assert s.session.get(f"{s.base}/_up").status_code == 200


def test_crash_during_upload_leaves_nothing_visible(att_server):
    s = att_server
    db = "att-crash"
    assert s.session.put(f"{s.base}/{db}").status_code == 201
    auth = base64.b64encode(":".join(ATT_ADMIN).encode()).decode()
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    sock.sendall((f"PUT /{db}/d/half HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {auth}\r\n"
                  f"Content-Type: application/octet-stream\r\nContent-Length: {64 * 1024 * 1024}\r\n\r\n").encode())
    for _ in range(8):
        sock.sendall(b"z" * (1024 * 1024))
    time.sleep(0.5)
    s.kill()
    sock.close()
    tmp = os.path.join(s.blob_dir(db), "tmp")
    assert os.listdir(tmp), "the upload should have been in progress"
    s.start()
    assert os.listdir(tmp) == []
    assert s.blob_files(db) == []
    assert s.session.get(f"{s.base}/{db}/d").status_code == 404
