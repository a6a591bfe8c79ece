"""The gallery's resumable uploads with `couchlite receive`'s one-time drop credentials: a video cut off mid-file
continues from the byte the receiver has (counted by the receiver, not from zero), lands in the folder only once
complete and verified, and every byte counts against `--max-size`. couchlite-only: these start a real
`couchlite receive`."""

from __future__ import annotations

import hashlib
import os
import random
import socket
import time
import urllib.parse

import pytest

from processes import process_fixture
from receive_support import Receiver, photo, wait_for_files


@pytest.fixture
def receivers(request):
    binary = os.environ["COUCHLITE_BIN"]

    def make(root: str, index: int, *flags: str) -> Receiver:
        return Receiver(binary, root, *flags, name=f"receiver{index}")

    yield from process_fixture(request, "couchlite-drop-resume-", make)


def uploads(receiver: Receiver) -> str:
    return f"{receiver.base}/_photos/api/db/{urllib.parse.quote(receiver.db)}/uploads"


def create(receiver: Receiver, name: str, data: bytes):
    return receiver.session().post(uploads(receiver), params={
        "name": name, "type": "video/mp4", "length": str(len(data)), "sha256": hashlib.sha256(data).hexdigest()})


def offset_of(receiver: Receiver, upload_id: str) -> int:
    r = receiver.session().head(f"{uploads(receiver)}/{upload_id}")
    assert r.status_code == 200, r.status_code
    return int(r.headers["Upload-Offset"])


def send_cut(receiver: Receiver, upload_id: str, data: bytes, sent: int) -> None:
    """Announces all of `data`, sends `sent` bytes of it, and drops the connection (a phone leaving the Wi-Fi)."""
    import base64
    parts = receiver.parts
    host = parts.netloc.rpartition("@")[2]
    auth = base64.b64encode(":".join(receiver.auth).encode()).decode()
    path = urllib.parse.urlsplit(uploads(receiver)).path + "/" + upload_id
    head = (f"PUT {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Basic {auth}\r\nUpload-Offset: 0\r\n"
            f"Content-Type: application/offset+octet-stream\r\nContent-Length: {len(data)}\r\n\r\n").encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as s:
        s.sendall(head + data[:sent])
        s.shutdown(socket.SHUT_RDWR)


def settled_offset(receiver: Receiver, upload_id: str, expected: int) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and offset_of(receiver, upload_id) < expected:
        time.sleep(0.05)
    return offset_of(receiver, upload_id)


def test_drop_video_cut_mid_file_resumes_from_the_receivers_offset(receivers):
    receiver = receivers()
    receiver.start()
    data = photo("mp4", 24 * 1024 * 1024 + 5, random.Random(27))
    r = create(receiver, "long take.mp4", data)
    assert r.status_code == 201, r.text
    upload_id = r.json()["id"]
    cut_at = len(data) * 6 // 10
    send_cut(receiver, upload_id, data, cut_at)
    kept = settled_offset(receiver, upload_id, cut_at)
    assert kept == cut_at
    # Nothing reaches the folder (nor the database) while the file is incomplete.
    time.sleep(0.5)
    assert not os.path.isdir(receiver.out) or os.listdir(receiver.out) == []
    # Picking the same file again finds the same upload at the same byte.
    again = create(receiver, "long take.mp4", data)
    assert again.status_code == 200 and again.json()["id"] == upload_id and again.json()["offset"] == kept
    # Only the rest is sent: the receiver counts the bytes of the append.
    rest = data[kept:]
    r = receiver.session().put(f"{uploads(receiver)}/{upload_id}", data=rest,
                               headers={"Upload-Offset": str(kept)})
    assert r.status_code == 201, r.text
    assert len(rest) < len(data) // 2
    names = wait_for_files(receiver.out, 1)
    assert names == ["long take.mp4"]
    with open(os.path.join(receiver.out, names[0]), "rb") as f:
        assert hashlib.sha256(f.read()).digest() == hashlib.sha256(data).digest()


def test_drop_upload_past_max_size_is_refused_before_it_is_sent(receivers):
    receiver = receivers("--max-size", "300k")
    receiver.start()
    rng = random.Random(6)
    too_big = photo("mp4", 400_000, rng)
    r = create(receiver, "too big.mp4", too_big)
    assert r.status_code == 507 and r.json()["error"] == "insufficient_storage", r.text
    # An upload that fits is charged as its bytes arrive: afterwards, what is left is too little for another.
    fits = photo("mp4", 200_000, rng)
    upload = create(receiver, "fits.mp4", fits).json()
    r = receiver.session().put(f"{uploads(receiver)}/{upload['id']}", data=fits, headers={"Upload-Offset": "0"})
    assert r.status_code == 201, r.text
    r = create(receiver, "second.mp4", photo("mp4", 200_000, rng))
    assert r.status_code == 507, r.text
    assert wait_for_files(receiver.out, 1) == ["fits.mp4"]


def test_drop_credentials_cannot_read_another_senders_upload(receivers):
    receiver = receivers()
    receiver.start()
    data = photo("mp4", 100_000, random.Random(3))
    admin_upload = receiver.admin().post(uploads(receiver), params={
        "name": "admin.mp4", "length": str(len(data)), "sha256": hashlib.sha256(data).hexdigest()})
    assert admin_upload.status_code == 201, admin_upload.text
    upload_id = admin_upload.json()["id"]
    r = receiver.session().head(f"{uploads(receiver)}/{upload_id}")
    assert r.status_code == 404
    r = receiver.session().put(f"{uploads(receiver)}/{upload_id}", data=data, headers={"Upload-Offset": "0"})
    assert r.status_code == 404


def promise_from(receiver: Receiver, source: str, n: int) -> int:
    """POSTs a 1-byte promise from the address `source` (127.0.0.0/8 all reach the loopback receiver)."""
    import base64
    import http.client
    parts = receiver.parts
    auth = base64.b64encode(":".join(receiver.auth).encode()).decode()
    query = urllib.parse.urlencode({"name": f"p{n}.jpg", "type": "image/jpeg", "length": "1",
                                    "sha256": f"{n:064x}"})
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30, source_address=(source, 0))
    try:
        conn.request("POST", urllib.parse.urlsplit(uploads(receiver)).path + "?" + query,
                     headers={"Authorization": f"Basic {auth}"})
        return conn.getresponse().status
    finally:
        conn.close()


def test_one_drop_sender_does_not_take_every_senders_upload_slots(receivers):
    """Issue 35, item 5: eight 1-byte promises of one sender took the shared account's eight slots, and every
    other sender's resumable push failed; the slots are each sender's now."""
    receiver = receivers("--bind", "127.0.0.1")
    receiver.start()
    assert [promise_from(receiver, "127.0.0.1", n) for n in range(8)] == [201] * 8
    assert promise_from(receiver, "127.0.0.1", 8) == 403
    assert promise_from(receiver, "127.0.0.2", 9) == 201
