"""A full disk: the data dir (or `couchlite receive`'s `--out`) on a small tmpfs the test mounts.

Writes that do not fit answer 507 `insufficient_storage` on every write path (document PUT,
`_bulk_docs`, inline, standalone and multipart attachments, `_local` documents), never a 500 or a
hang; everything acknowledged before reads back byte for byte; reads keep working while full; the
SQLite files pass `PRAGMA integrity_check`, every blob matches its md5 name and no temporary file is
left; once a filler file the test wrote first is deleted, writes and a resumed replication succeed
without a restart. `couchlite receive` says "disk full" in its progress and carries on.

Mounting needs root (CI runs as root); elsewhere these tests are skipped, saying so."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import tempfile
import time
import uuid

import pytest
import requests

from receive_support import Receiver, inline_doc, photo, wait_for_files

TIMEOUT = 120  # seconds any one request may take: a full disk must not hang a request
rng = random.Random(507)


@pytest.fixture
def small_fs():
    """`small_fs(megabytes)` mounts a tmpfs of that size and returns its path; all are unmounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs these tests as root)")
    mounted: list[str] = []

    def mount(megabytes: int) -> str:
        path = tempfile.mkdtemp(prefix="couchlite-full-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m,mode=0700", "tmpfs", path],
                       check=True)
        mounted.append(path)
        return path

    yield mount
    for path in mounted:
        if subprocess.run(["umount", path]).returncode != 0:
            subprocess.run(["umount", "-l", path])
        shutil.rmtree(path, ignore_errors=True)


def write_filler(directory: str, megabytes: int) -> str:
    path = os.path.join(directory, "filler")
    with open(path, "wb") as f:
        for _ in range(megabytes):
            f.write(os.urandom(1 << 20))
    return path


def md5_b64(data: bytes) -> str:
    return "md5-" + base64.b64encode(hashlib.md5(data).digest()).decode()


def assert_full(r: requests.Response) -> None:
    assert r.status_code == 507, (r.status_code, r.text[:300])
    body = r.json()
    assert body["error"] == "insufficient_storage", body
    assert body["reason"], body


class Ledger:
    """What the server acknowledged: each document's fields and attachments, to read back later."""

    def __init__(self):
        self.docs: dict[str, dict] = {}          # id -> fields
        self.atts: dict[tuple[str, str], bytes] = {}
        self.locals: dict[str, dict] = {}

    def check(self, s: requests.Session, db: str) -> None:
        for doc_id, fields in self.docs.items():
            r = s.get(f"{db}/{doc_id}", timeout=TIMEOUT)
            assert r.status_code == 200, (doc_id, r.status_code, r.text[:200])
            doc = r.json()
            for key, value in fields.items():
                assert doc.get(key) == value, (doc_id, key)
        for (doc_id, name), data in self.atts.items():
            r = s.get(f"{db}/{doc_id}/{name}", timeout=TIMEOUT)
            assert r.status_code == 200, (doc_id, name, r.status_code)
            assert hashlib.md5(r.content).digest() == hashlib.md5(data).digest(), (doc_id, name)
        for doc_id, body in self.locals.items():
            r = s.get(f"{db}/{doc_id}", timeout=TIMEOUT)
            assert r.status_code == 200, (doc_id, r.text[:200])
            assert r.json()["value"] == body["value"]


def rev_of(s: requests.Session, url: str) -> str:
    return s.get(url, timeout=TIMEOUT).json()["_rev"]


def multipart_body(doc: dict, name: str, data: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    doc = dict(doc)
    doc["_attachments"] = {name: {"follows": True, "content_type": "image/jpeg", "length": len(data)}}
    parts = [f"--{boundary}\r\nContent-Type: application/json\r\n\r\n".encode(), json.dumps(doc).encode(),
             f"\r\n--{boundary}\r\n\r\n".encode(), data, f"\r\n--{boundary}--".encode()]
    return b"".join(parts), f'multipart/related; boundary="{boundary}"'


def write_paths(s: requests.Session, db: str, ledger: Ledger, size: int, holder: tuple[str, str]):
    """One write per path, each `size` bytes of payload; yields (path name, response, on_success).
    `holder` is a document made while there was space (id, rev), for the standalone attachment."""
    tag = uuid.uuid4().hex[:8]
    data = os.urandom(size)

    doc_id = f"json-{tag}"
    fields = {"blob": base64.b64encode(data).decode()}
    yield "PUT doc", s.put(f"{db}/{doc_id}", json=fields, timeout=TIMEOUT), \
        lambda: ledger.docs.__setitem__(doc_id, fields)

    half = base64.b64encode(data[: size // 2]).decode()
    bulk_ids = [f"bulk-{tag}-{i}" for i in range(2)]
    r = s.post(f"{db}/_bulk_docs", json={"docs": [{"_id": i, "blob": half} for i in bulk_ids]}, timeout=TIMEOUT)

    def bulk_ok(r=r):
        for item in r.json():
            assert item.get("ok"), item
            ledger.docs[item["id"]] = {"blob": half}
    yield "_bulk_docs", r, bulk_ok

    inline_id = f"inline-{tag}"
    r = s.put(f"{db}/{inline_id}", json={"_attachments": {"p.jpg": {
        "content_type": "image/jpeg", "data": base64.b64encode(data).decode()}}}, timeout=TIMEOUT)
    yield "inline attachment", r, lambda: ledger.atts.__setitem__((inline_id, "p.jpg"), data)

    holder_id, holder_rev = holder
    r = s.put(f"{db}/{holder_id}/s-{tag}.jpg?rev={holder_rev}", data=data, headers={"Content-Type": "image/jpeg"},
              timeout=TIMEOUT)
    yield "standalone attachment", r, lambda: ledger.atts.__setitem__((holder_id, f"s-{tag}.jpg"), data)

    mp_id = f"multipart-{tag}"
    payload, ctype = multipart_body({"kind": "mp"}, "m.jpg", data)
    r = s.put(f"{db}/{mp_id}", data=payload, headers={"Content-Type": ctype}, timeout=TIMEOUT)

    def mp_ok():
        ledger.docs[mp_id] = {"kind": "mp"}
        ledger.atts[(mp_id, "m.jpg")] = data
    yield "multipart attachment", r, mp_ok

    rep = inline_doc(f"replicated-{tag}", {"r.jpg": ("image/jpeg", data)})
    r = s.post(f"{db}/_bulk_docs", json={"docs": [rep], "new_edits": False}, timeout=TIMEOUT)
    yield "replicated _bulk_docs", r, lambda: ledger.atts.__setitem__((rep["_id"], "r.jpg"), data)

    local_id = f"_local/ckpt-{tag}"
    body = {"value": base64.b64encode(data).decode()}
    yield "_local doc", s.put(f"{db}/{local_id}", json=body, timeout=TIMEOUT), \
        lambda: ledger.locals.__setitem__(local_id, body)


def check_store_on_disk(data_dir: str) -> None:
    """integrity_check on every database, every blob's md5 is its name, no temporary file is left."""
    databases = os.path.join(data_dir, "databases")
    files = [f for f in os.listdir(databases) if f.endswith(".couch")]
    assert files
    for name in files:
        connection = sqlite3.connect(os.path.join(databases, name))
        try:
            assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)], name
        finally:
            connection.close()
    root = os.path.join(data_dir, "attachments")
    blobs = 0
    for store in os.listdir(root):
        if store == ".trash":  # deleted databases' blobs, removed in the background
            continue
        for sub in os.listdir(os.path.join(root, store)):
            path = os.path.join(root, store, sub)
            if sub == "tmp":
                assert os.listdir(path) == [], f"temporary files left in {path}: {os.listdir(path)}"
                continue
            for blob in os.listdir(path):
                with open(os.path.join(path, blob), "rb") as f:
                    assert hashlib.md5(f.read()).hexdigest() == blob, f"blob {store}/{sub}/{blob} is damaged"
                blobs += 1
    assert blobs > 0


def test_full_data_dir_answers_507_loses_nothing_and_recovers(small_fs, servers):
    fs = small_fs(16)
    filler = write_filler(fs, 5)
    # A bound of 2 open databases: reading the side databases while full closes and reopens them.
    server = servers("full", args=("--max-dbs-open", "2"), data_dir=os.path.join(fs, "data"))
    source = servers("camera")
    s = requests.Session()
    s.auth = ("admin", "pass")
    base = f"http://127.0.0.1:{server.port}"
    db = f"{base}/photos"
    assert s.put(db, timeout=TIMEOUT).status_code == 201
    ledger = Ledger()
    sides = [f"{base}/side-{i}" for i in range(4)]
    for side in sides:
        assert s.put(side, timeout=TIMEOUT).status_code == 201
        assert s.put(f"{side}/doc", json={"side": side}, timeout=TIMEOUT).status_code == 201
    holders = []
    for i in range(10):
        r = s.put(f"{db}/holder-{i}", json={}, timeout=TIMEOUT)
        assert r.status_code == 201
        holders.append((f"holder-{i}", r.json()["rev"]))
        ledger.docs[f"holder-{i}"] = {}

    # Photos until the disk is full, then smaller ones until even those do not fit.
    refused = 0
    for size in (256 << 10, 64 << 10, 16 << 10):
        for i in range(400):
            doc_id = f"photo-{size}-{i}"
            r = s.put(f"{db}/{doc_id}", json={"n": i}, timeout=TIMEOUT)
            if r.status_code == 507:
                assert_full(r)
                refused += 1
                break
            assert r.status_code == 201, r.text
            ledger.docs[doc_id] = {"n": i}
            data = os.urandom(size)
            r = s.put(f"{db}/{doc_id}/photo.jpg?rev={r.json()['rev']}", data=data,
                      headers={"Content-Type": "image/jpeg"}, timeout=TIMEOUT)
            if r.status_code == 507:
                assert_full(r)
                refused += 1
                break
            assert r.status_code == 201, r.text
            ledger.atts[(doc_id, "photo.jpg")] = data
    assert refused == 3, "the disk never filled up"
    assert len(ledger.atts) > 10

    # Every write path answers 507 once its write does not fit (a write that still fits succeeds).
    seen_full: set[str] = set()
    for holder in holders:
        for path, r, on_success in write_paths(s, db, ledger, 512 << 10, holder):
            if r.status_code in (201, 202):
                on_success()
            else:
                assert_full(r)
                seen_full.add(path)
        if len(seen_full) == 7:
            break
    assert seen_full == {"PUT doc", "_bulk_docs", "inline attachment", "standalone attachment",
                         "multipart attachment", "replicated _bulk_docs", "_local doc"}

    # Reads keep working while the disk is full, also of databases closed by the bound and reopened.
    for _ in range(2):
        for side in sides:
            r = s.get(f"{side}/doc", timeout=TIMEOUT)
            assert r.status_code == 200, (side, r.status_code, r.text)
            assert r.json()["side"] == side
    ledger.check(s, db)
    assert s.get(f"{db}/_all_docs", timeout=TIMEOUT).status_code == 200
    changes = s.get(f"{db}/_changes", timeout=TIMEOUT)
    assert changes.status_code == 200
    assert len(changes.json()["results"]) >= len(ledger.docs)
    assert s.get(db, timeout=TIMEOUT).status_code == 200

    # A replication into the full database fails (not hangs) ...
    src = f"http://admin:pass@127.0.0.1:{source.port}/camera"
    assert s.put(src, timeout=TIMEOUT).status_code == 201
    camera = {}
    for i in range(8):
        data = os.urandom(96 << 10)
        camera[f"cam-{i}"] = data
        r = s.put(f"{src}/cam-{i}", json={"_attachments": {"c.jpg": {
            "content_type": "image/jpeg", "data": base64.b64encode(data).decode()}}}, timeout=TIMEOUT)
        assert r.status_code == 201
    replicate = {"source": src, "target": "photos"}
    r = s.post(f"{base}/_replicate", json=replicate, timeout=300)
    assert r.status_code == 500, r.text
    assert r.json() == {"error": "replication_failed", "reason": "the disk of photos is full"}

    # ... and once space is freed, writes and the resumed replication succeed without a restart.
    os.remove(filler)
    deadline = time.monotonic() + 30
    while True:
        data = os.urandom(64 << 10)
        r = s.put(f"{db}/after-free", json={"_attachments": {"a.jpg": {
            "content_type": "image/jpeg", "data": base64.b64encode(data).decode()}}}, timeout=TIMEOUT)
        if r.status_code == 201 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert r.status_code == 201, r.text
    ledger.atts[("after-free", "a.jpg")] = data
    r = s.put(f"{db}/_local/after-free", json={"value": "v"}, timeout=TIMEOUT)
    assert r.status_code == 201, r.text
    ledger.locals["_local/after-free"] = {"value": "v"}
    r = s.post(f"{base}/_replicate", json=replicate, timeout=300)
    assert r.status_code == 200, r.text
    assert r.json()["ok"] is True
    for doc_id, data in camera.items():
        ledger.atts[(doc_id, "c.jpg")] = data
    ledger.check(s, db)

    # On disk: consistent files, intact blobs, no temporary files; after a restart everything is there.
    server.stop()
    check_store_on_disk(server.data_dir)
    server.start()
    ledger.check(s, db)


def test_receive_says_disk_full_and_carries_on(small_fs):
    binary = os.environ["COUCHLITE_BIN"]
    root = tempfile.mkdtemp(prefix="couchlite-receive-full-")
    out_fs = small_fs(8)
    data_fs = small_fs(8)
    out_filler = write_filler(out_fs, 7)
    receiver = Receiver(binary, root)
    receiver.out = os.path.join(out_fs, "out")
    receiver.data_dir = os.path.join(data_fs, "data")
    try:
        # A drop may take at most half of what is free (`--max-size`'s default), which on these tiny disks would
        # refuse the uploads before the disks fill: this test is about the disks filling.
        receiver.start("--max-size", "1G")
        s = receiver.session()
        url = f"{receiver.base}/{receiver.db}/_bulk_docs"
        # Six photos of 300 kB: only about three fit in the export folder until its filler goes.
        photos = {f"photo-out-{i}": photo("jpg", 300_000, rng) for i in range(6)}
        for doc_id, data in photos.items():
            r = s.post(url, json={"docs": [inline_doc(doc_id, {"p": ("image/jpeg", data)})],
                                  "new_edits": False}, timeout=TIMEOUT)
            assert r.status_code == 201, r.text
        receiver.wait_for_log("disk full: no space left in " + receiver.out)
        os.remove(out_filler)
        names = wait_for_files(receiver.out, len(photos), timeout=60)
        receiver.wait_for_log("carrying on")
        saved = set()
        for name in names:
            with open(os.path.join(receiver.out, name), "rb") as f:
                saved.add(hashlib.md5(f.read()).hexdigest())
        assert saved == {hashlib.md5(d).hexdigest() for d in photos.values()}

        # The data dir fills up: pushes get 507, the progress says so; once space returns, photos arrive.
        data_filler = write_filler(data_fs, 4)
        refused = None
        for i in range(200):
            data = photo("jpg", 400_000, rng)
            r = s.post(url, json={"docs": [inline_doc(f"photo-data-{i}", {"p": ("image/jpeg", data)})],
                                  "new_edits": False}, timeout=TIMEOUT)
            if r.status_code == 507:
                assert_full(r)
                refused = (f"photo-data-{i}", data)
                break
            assert r.status_code == 201, r.text
        assert refused, "the data dir never filled up"
        receiver.wait_for_log("disk full: no space left in the data dir")
        os.remove(data_filler)
        doc_id, data = refused
        r = s.post(url, json={"docs": [inline_doc(doc_id, {"p": ("image/jpeg", data)})], "new_edits": False},
                   timeout=TIMEOUT)
        assert r.status_code == 201, r.text
        deadline = time.monotonic() + 60
        digest = hashlib.md5(data).hexdigest()
        while True:
            found = []
            for name in os.listdir(receiver.out):
                if not name.startswith("."):
                    with open(os.path.join(receiver.out, name), "rb") as f:
                        found.append(hashlib.md5(f.read()).hexdigest())
            if digest in found or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert digest in found, "the photo pushed after space returned was not saved"
    except BaseException:
        print(receiver.log_tail())
        raise
    finally:
        receiver.stop()
        shutil.rmtree(root, ignore_errors=True)
