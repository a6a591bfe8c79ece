"""The gallery's resumable uploads over HTTP (/_photos/api/db/{db}/uploads): couchlite-only, skipped against
CouchDB. A file is announced with its length and SHA-256, appended from the byte the server has (also after the
connection was cut mid-body), and becomes a photo only once complete and verified. Attack tests are named after
the attack."""
import hashlib
import os
import socket
import urllib.parse
import uuid

import pytest
import requests

# An MP4's first box, then noise: the gallery takes only what its bytes show to be a photo or video.
BODY = b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2" + os.urandom(3 * 1024 * 1024 + 17 - 24)
SHA = hashlib.sha256(BODY).hexdigest()


@pytest.fixture(autouse=True)
def couchlite_only(couch):
    if couch.get("/").json().get("vendor", {}).get("name") != "couchlite":
        pytest.skip("the photo gallery is couchlite's")


def uploads(db):
    return f"/_photos/api/db/{db}/uploads"


def create(couch, db, body=BODY, sha=None, name="clip.mp4", params_extra=None, **kw):
    params = {"name": name, "type": "video/mp4", "modified": "1700000000000", "length": str(len(body)),
              "sha256": sha or hashlib.sha256(body).hexdigest(), **(params_extra or {})}
    return couch.post(uploads(db) + "?" + urllib.parse.urlencode(params), **kw)


def append(couch, db, upload_id, offset, data, **kw):
    headers = {"Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"}
    headers.update(kw.pop("headers", {}))
    return couch.put(f"{uploads(db)}/{upload_id}", data=data, headers=headers, **kw)


def offset_of(couch, db, upload_id):
    r = couch.head(f"{uploads(db)}/{upload_id}")
    assert r.status_code == 200, r.status_code
    return int(r.headers["Upload-Offset"])


def cut_append(couch, db, upload_id, offset, data, sent):
    """A PUT that announces all of `data` and sends only `sent` bytes before the connection drops."""
    parts = urllib.parse.urlsplit(couch.base)
    head = (f"PUT {uploads(db)}/{upload_id} HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
            f"Authorization: {requests.auth._basic_auth_str(couch.user, couch.password)}\r\n"
            f"Upload-Offset: {offset}\r\nContent-Type: application/offset+octet-stream\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as s:
        s.sendall(head + data[:sent])
        s.shutdown(socket.SHUT_RDWR)


def photos(couch, db):
    return [row["id"] for row in couch.get(f"/_photos/api/db/{db}/photos").json()["rows"]]


def wait_offset(couch, db, upload_id, at_least):
    import time
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        value = offset_of(couch, db, upload_id)
        if value >= at_least:
            return value
        time.sleep(0.05)
    return offset_of(couch, db, upload_id)


def test_upload_cut_mid_body_resumes_from_the_middle_not_from_zero(couch, db):
    r = create(couch, db)
    assert r.status_code == 201, r.text
    upload = r.json()
    assert upload["offset"] == 0 and upload["length"] == len(BODY)
    half = len(BODY) // 2
    cut_append(couch, db, upload["id"], 0, BODY, half)
    kept = wait_offset(couch, db, upload["id"], half)
    assert kept == half
    # Not a photo yet.
    assert photos(couch, db) == []
    r = append(couch, db, upload["id"], kept, BODY[kept:])
    assert r.status_code == 201, r.text
    photo = r.json()
    assert photo["id"] == "photo-" + SHA[:32]
    stored = couch.get(f"/{db}/{photo['id']}/clip.mp4")
    assert stored.content == BODY
    doc = couch.get(f"/{db}/{photo['id']}").json()
    assert doc["type"] == "photo" and doc["size"] == len(BODY) and doc["name"] == "clip.mp4"
    # The partial file is gone once it became the photo.
    assert couch.head(f"{uploads(db)}/{upload['id']}").status_code == 404


def test_appends_in_several_pieces_and_get_reports_the_offset(couch, db):
    upload = create(couch, db).json()
    for start in range(0, len(BODY), 1024 * 1024):
        end = min(start + 1024 * 1024, len(BODY))
        r = append(couch, db, upload["id"], start, BODY[start:end])
        if end < len(BODY):
            assert r.status_code == 200 and r.json()["offset"] == end and r.headers["Upload-Offset"] == str(end)
            status = couch.get(f"{uploads(db)}/{upload['id']}").json()
            assert status["offset"] == end and status["length"] == len(BODY)
        else:
            assert r.status_code == 201, r.text


def test_creating_the_same_file_again_resumes_it(couch, db):
    first = create(couch, db).json()
    assert append(couch, db, first["id"], 0, BODY[:1000]).status_code == 200
    again = create(couch, db)
    assert again.status_code == 200
    assert again.json()["id"] == first["id"] and again.json()["offset"] == 1000 and again.json()["resumed"]


def test_overlapping_append_is_409_with_the_servers_offset(couch, db):
    upload = create(couch, db).json()
    append(couch, db, upload["id"], 0, BODY[:5000])
    r = append(couch, db, upload["id"], 4000, BODY[4000:])
    assert r.status_code == 409
    assert r.json()["error"] == "conflict" and r.json()["offset"] == 5000
    assert r.headers["Upload-Offset"] == "5000"
    assert offset_of(couch, db, upload["id"]) == 5000


def test_offset_beyond_length_is_409_and_stores_nothing(couch, db):
    upload = create(couch, db).json()
    r = append(couch, db, upload["id"], len(BODY) + 10, b"x")
    assert r.status_code == 409 and r.json()["offset"] == 0
    r = append(couch, db, upload["id"], 0, b"", headers={"Upload-Offset": "-5"})
    assert r.status_code == 400


def test_body_past_the_announced_length_is_413(couch, db):
    upload = create(couch, db, body=b"0123456789").json()
    r = append(couch, db, upload["id"], 0, b"0123456789ABCDEF")
    assert r.status_code == 413
    assert offset_of(couch, db, upload["id"]) == 0


def test_wrong_digest_never_becomes_a_photo(couch, db):
    upload = create(couch, db, sha="0" * 64).json()
    r = append(couch, db, upload["id"], 0, BODY)
    assert r.status_code == 400 and r.json()["error"] == "bad_request"
    assert photos(couch, db) == []
    assert couch.head(f"{uploads(db)}/{upload['id']}").status_code == 404


def test_malformed_creation_is_400(couch, db):
    assert create(couch, db, sha="not-hex").status_code == 400
    r = couch.post(uploads(db) + "?name=a.jpg&length=-1&sha256=" + SHA)
    assert r.status_code == 400
    assert couch.post(uploads(db) + "?name=a.jpg&sha256=" + SHA).status_code == 400
    assert couch.post(uploads(db) + "?length=3&sha256=" + SHA).status_code == 400


def test_too_many_partial_uploads_are_refused(couch, db):
    for n in range(8):
        body = f"file {n}".encode()
        assert create(couch, db, body=body).status_code == 201
    r = create(couch, db, body=b"one too many")
    assert r.status_code == 403 and "Too many unfinished uploads" in r.json()["reason"]


def test_another_users_upload_id_is_404(couch, db):
    name = "mallory-" + uuid.uuid4().hex[:8]
    assert couch.put(f"/_users/org.couchdb.user:{name}", json={
        "name": name, "password": "pw", "roles": [], "type": "user"}).status_code == 201
    try:
        assert couch.put(f"/{db}/_security", json={
            "admins": {"names": [], "roles": []}, "members": {"names": [name], "roles": []}}).status_code == 200
        upload = create(couch, db).json()
        mallory = requests.Session()
        mallory.auth = (name, "pw")
        url = couch.url(f"{uploads(db)}/{upload['id']}")
        assert mallory.head(url).status_code == 404
        r = mallory.put(url, data=BODY[:10], headers={"Upload-Offset": "0"})
        assert r.status_code == 404 and r.json()["error"] == "not_found"
        assert mallory.delete(url).status_code == 404
        assert offset_of(couch, db, upload["id"]) == 0
    finally:
        rev = couch.get(f"/_users/org.couchdb.user:{name}").json()["_rev"]
        couch.delete(f"/_users/org.couchdb.user:{name}?rev={rev}")


def test_path_traversal_in_upload_id_is_404(couch, db):
    for upload_id in ["..%2F..%2Fadmins.json", "%2E%2E", "A" * 32, "0" * 31]:
        assert couch.raw("HEAD", f"{uploads(db)}/{upload_id}").status_code == 404


def test_cross_site_upload_creation_refused(couch, db):
    r = create(couch, db, headers={"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    upload = create(couch, db).json()
    r = append(couch, db, upload["id"], 0, BODY, headers={"Origin": "http://evil.example"})
    assert r.status_code == 403
    assert offset_of(couch, db, upload["id"]) == 0


def test_upload_into_a_database_one_may_not_read_is_refused(couch, db):
    assert couch.put(f"/{db}/_security", json={
        "admins": {"names": [], "roles": []}, "members": {"names": ["nobody"], "roles": []}}).status_code == 200
    r = requests.post(couch.url(uploads(db)) + f"?name=a.jpg&length=3&sha256={SHA}",
                      headers={"Origin": couch.base})
    assert r.status_code in (401, 403)


def test_cancelled_upload_is_gone(couch, db):
    upload = create(couch, db).json()
    append(couch, db, upload["id"], 0, BODY[:100])
    assert couch.delete(f"{uploads(db)}/{upload['id']}").status_code == 200
    assert couch.head(f"{uploads(db)}/{upload['id']}").status_code == 404


def test_upload_with_a_pushed_revision_becomes_that_revision(couch, db):
    fields = '{"type":"photo","name":"clip.mp4","taken":"2026-05-12T14:03:11+02:00","size":%d}' % len(BODY)
    r = create(couch, db, params_extra={"rev": "1-0123456789abcdef0123456789abcdef", "fields": fields})
    assert r.status_code == 201, r.text
    upload = r.json()
    r = append(couch, db, upload["id"], 0, BODY)
    assert r.status_code == 201, r.text
    doc = couch.get(f"/{db}/{r.json()['id']}").json()
    assert doc["_rev"] == "1-0123456789abcdef0123456789abcdef"
    assert doc["taken"] == "2026-05-12T14:03:11+02:00" and doc["_attachments"]["clip.mp4"]["length"] == len(BODY)


def test_pushed_revision_with_special_fields_is_refused(couch, db):
    for extra in [{"rev": "1-abc", "fields": '{"_deleted":true}'}, {"rev": "1-abc", "fields": "[1]"},
                  {"rev": "not-a-rev", "fields": "{}"}, {"fields": "{}"}]:
        r = create(couch, db, params_extra=extra)
        assert r.status_code == 400, (extra, r.text)


def test_welcome_announces_resumable_uploads_for_push(couch):
    assert couch.get("/").json()["vendor"]["resumable_uploads"] == 1


def test_renamed_text_file_resumable_upload_is_refused_with_its_name(couch, db):
    """Issue 36, item 3: the append that completes a text file named .mp4 is refused (415) with its name; the
    upload is gone and no photo was made."""
    text = b"not a video at all\n" * 1000
    upload = create(couch, db, body=text, name="notes.mp4").json()
    r = append(couch, db, upload["id"], 0, text)
    assert r.status_code == 415, r.text
    assert "notes.mp4 is not a photo or video" in r.json()["reason"]
    assert couch.head(f"{uploads(db)}/{upload['id']}").status_code == 404
    assert couch.get(f"/_photos/api/db/{db}/photos").json()["rows"] == []
