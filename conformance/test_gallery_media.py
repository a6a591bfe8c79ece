"""The gallery's media: the listing's `taken` (the camera's date, with its offset), order by it, kind, size,
duration, camera, GPS for database admins only; thumbnails and viewer previews of HEIC, AVIF, GIF, WebP, TIFF, BMP
and video posters.
couchlite-only, skipped against CouchDB. Samples: Tests/MediaTests/Samples (see its README)."""
import uuid

import pytest
import requests

from media_samples import jpeg_with_exif, sample
from test_gallery import TINY_JPEG, api, make_user


@pytest.fixture(autouse=True)
def couchlite_only(couch):
    if couch.get("/").json().get("vendor", {}).get("name") != "couchlite":
        pytest.skip("the photo gallery is couchlite's")


def upload(couch, db, name, body, content_type="image/jpeg", modified=None, auth=None):
    params = {"name": name, "type": content_type}
    if modified is not None:
        params["modified"] = modified
    if auth is not None:
        return requests.post(couch.url(f"{api(db)}/upload"), params=params, data=body, auth=auth, timeout=60)
    return couch.request("POST", f"{api(db)}/upload", params=params, data=body)


def listing(couch, db, **params):
    r = couch.get(f"{api(db)}/photos", params=params)
    assert r.status_code == 200, r.text
    return r.json()


def test_listing_is_ordered_by_the_exif_date_taken_newest_first(couch, db):
    dates = [("b.jpg", "2026:05:10 08:00:00", "+02:00"), ("a.jpg", "2026:05:12 14:03:11", "+02:00"),
             ("c.jpg", "2026:05:11 23:30:00", "-05:00")]
    for name, date, offset in dates:
        assert upload(couch, db, name, jpeg_with_exif(TINY_JPEG, date=date, offset=offset)).status_code == 201
    # No EXIF: the file's time (the upload's `modified`), 2020.
    assert upload(couch, db, "old.jpg", TINY_JPEG, modified=1600000000000).status_code == 201
    rows = listing(couch, db)["rows"]
    assert [r["fields"]["name"] for r in rows] == ["a.jpg", "c.jpg", "b.jpg", "old.jpg"]
    assert [r["taken"] for r in rows] == [
        "2026-05-12T14:03:11+02:00", "2026-05-11T23:30:00-05:00", "2026-05-10T08:00:00+02:00",
        "2020-09-13T12:26:40Z"]
    # Pages follow the same order.
    seen, page = [], listing(couch, db, limit=1)
    seen += [r["fields"]["name"] for r in page["rows"]]
    while page["next"] is not None:
        page = listing(couch, db, limit=1, before=page["next"])
        seen += [r["fields"]["name"] for r in page["rows"]]
    assert seen == ["a.jpg", "c.jpg", "b.jpg", "old.jpg"]


def test_uploaded_document_takes_the_exif_date(couch, db):
    body = jpeg_with_exif(TINY_JPEG, date="2026:05:12 14:03:11", offset="+02:00")
    doc_id = upload(couch, db, "x.jpg", body, modified=1600000000000).json()["id"]
    assert couch.get(f"/{db}/{doc_id}").json()["taken"] == "2026-05-12T14:03:11+02:00"


def test_listing_reports_kind_size_camera_with_orientation_applied(couch, db):
    body = jpeg_with_exif(TINY_JPEG, date="2026:05:12 14:03:11", make="Apple", model="iPhone 15", orientation=6)
    upload(couch, db, "turned.jpg", body)
    row = listing(couch, db)["rows"][0]
    assert row["kind"] == "photo" and (row["width"], row["height"]) == (48, 64)
    assert row["camera"] == {"make": "Apple", "model": "iPhone 15"} and row["duration"] is None
    # Without an offset the camera's local time is given as it is.
    assert row["taken"] == "2026-05-12T14:03:11"


def test_gps_is_shown_only_to_database_admins(couch, db):
    body = jpeg_with_exif(TINY_JPEG, date="2026:05:12 14:03:11", gps=(48.8577, -2.2950))
    doc_id = upload(couch, db, "where.jpg", body).json()["id"]
    reader = make_user(couch, f"media-reader-{uuid.uuid4().hex[:8]}")
    assert couch.put(f"/{db}/_security", json={"members": {"names": [reader[0]]}}).status_code == 200
    admin_row = listing(couch, db)["rows"][0]
    assert admin_row["gps"]["latitude"] == pytest.approx(48.8577, abs=1e-3)
    assert admin_row["gps"]["longitude"] == pytest.approx(-2.2950, abs=1e-3)
    member = requests.get(couch.url(f"{api(db)}/photos"), auth=reader, timeout=30).json()["rows"][0]
    assert member["id"] == doc_id and member["gps"] is None
    one = requests.get(couch.url(f"{api(db)}/photo/{doc_id}"), auth=reader, timeout=30).json()
    assert one["gps"] is None


def test_a_cursor_that_is_not_a_page_boundary_is_refused(couch, db):
    r = couch.get(f"{api(db)}/photos", params={"before": "yesterday"})
    assert r.status_code == 400 and r.json()["error"] == "bad_request"


@pytest.mark.parametrize("name,content_type,kind", [
    ("exif-photo.heic", "image/heic", "photo"), ("photo.avif", "image/avif", "photo"),
    ("rotated.mp4", "video/mp4", "video"), ("rotated-hevc.mov", "video/quicktime", "video"),
    ("clip.webm", "video/webm", "video"), ("clip.3gp", "video/3gpp", "video"),
    ("animated.gif", "image/gif", "photo"), ("animated.webp", "image/webp", "photo"),
    ("exif.webp", "image/webp", "photo"), ("photo.tiff", "image/tiff", "photo"), ("photo.bmp", "image/bmp", "photo"),
])
def test_every_accepted_format_gets_a_jpeg_thumbnail_and_preview(couch, db, name, content_type, kind):
    # GIF and animated WebP included (issue 37): the first frame, not the placeholder.
    body = sample(name)
    doc_id = upload(couch, db, name, body, content_type=content_type).json()["id"]
    row = listing(couch, db)["rows"][0]
    assert row["kind"] == kind
    for route in ("thumb", "preview"):
        r = couch.get(f"{api(db)}/{route}/{doc_id}/{name}", params={"size": 160})
        assert r.status_code == 200 and r.headers["Content-Type"] == "image/jpeg", (route, r.headers)
        assert r.content[:3] == b"\xff\xd8\xff"
    download = couch.get(f"{api(db)}/download/{doc_id}/{name}")
    assert download.content == body


def test_video_row_has_duration_and_rotated_size(couch, db):
    upload(couch, db, "rotated.mp4", sample("rotated.mp4"), content_type="video/mp4")
    row = listing(couch, db)["rows"][0]
    assert (row["width"], row["height"]) == (240, 320)
    assert row["duration"] == pytest.approx(2.0, abs=0.1)
    assert row["taken"] == "2026-05-10T08:00:00Z"


def test_live_photo_is_one_document_with_its_video(couch, db):
    doc = {"type": "photo", "name": "IMG_0001.HEIC", "taken": "2026-05-08T11:00:00Z",
           "_attachments": {}}
    import base64
    doc["_attachments"]["IMG_0001.HEIC"] = {"content_type": "image/heic",
                                            "data": base64.b64encode(sample("live.heic")).decode()}
    doc["_attachments"]["IMG_0001.MOV"] = {"content_type": "video/quicktime",
                                           "data": base64.b64encode(sample("live.mov")).decode()}
    assert couch.put(f"/{db}/live-1", json=doc).status_code == 201
    row = listing(couch, db)["rows"][0]
    assert row["kind"] == "photo" and row["live"] == "IMG_0001.MOV"
    assert row["taken"] == "2026-05-08T12:00:00+01:00"
