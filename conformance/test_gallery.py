"""The photo gallery's HTTP side (/_photos/): couchlite-only, skipped against CouchDB. The page in a
real browser is tested in conformance/browser; here: the welcome negotiation, the page's headers,
the JSON API, thumbnails, downloads, the upload id scheme, and the cross-site defences."""
import base64
import hashlib
import uuid

import pytest
import requests

# A 64x48 JPEG (ffmpeg's testsrc).
TINY_JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAgAAAQABAAD//gAQTGF2YzU5LjM3LjEwMAD/2wBDAAgQEBMQExYWFhYWFhoYGhsbGxoaGhobGxsdHR0iIiId"
    "HR0bGx0dICAiIiUmJSMjIiMmJigoKDAwLi44ODpFRVP/xACxAAACAgMBAQAAAAAAAAAAAAAABwYIBAUDAgEBAAIDAQEBAAAAAAAA"
    "AAAAAAAGBwQIBQIBEAABAwIDAgcKDwEBAAAAAAABAgARBAMSBSFBMTJRcWEiEwaiFcGB0pKC4UNEs8OjwtHThOPiQqFidCNzkTUR"
    "AAEDAgMCBwwJBQEAAAAAAAEAAgMEETEhBRMGQUODEmHSgYLiwsOjkcFRROMWQtFx0yIUMvCioSNyUpJjNP/AABEIADAAQAMBEgAC"
    "EgADEgD/2gAMAwEAAhEDEQA/AK/vcZfRrzCqs0yNDdVE6dFI1UqCUzhSCYmTEBiEITWoqI1Bxr0tju+Yc3GfEGwEITbSEpEAbg6F"
    "JSGY852TB+7oHR6z5k7MY1jQ1osBgE17w7wt0xpp6ch1U4dBEAPzOGBeRm1p/udlYHMFRUS1Ur5pnmSR5u5xxPoAAyAGQGQyS8JK"
    "jJ1L8tliiZAxscbQ1rRYAfrH1k5kqwtqwwx00bYomhjGCzWjg9JJxJOZOZVpLNja0LP6FcVjwAhNSEst7+tva4tIc0kEG4INiCMC"
    "D614UBNc5jg5pLXNIIINiCMCCMwQvCwaKv6w9XdPSPBVoMXMY0B4uPlcFBIIIMEagjY5bpK3aHmSH73yuwv0Hgv6vX9aTgSDcZEc"
    "KlfeHdgUjTVUTTsWj+rFcuMduMaSS5zOF1yS3H8uGj3sbI1zXNDmuBa5rgCHA5EEHIgjEK2Lh+RZj3zoLd4mbif67v8AokCTwUjp"
    "AhcJEDFGxtSFAiEjOxaEqzK4SkEpp1qSSASk47aZHEYJEjYSH07Ff+je/ir+FtMQhCabG1oWf0JasbShbrQlmxtaFn9CuKx4AQmp"
    "CWbG2IWf0JasbShbqQpv2GWoprU4jhBsKCZMAq6wEgbpISJO2A/HYX3/AOz/ABra0KAEKNZLQqpauzUpugm2T0SgwQpJSoSF6GCY"
    "OsHYXE7OdVNjgosnlCvAsNck1DZ8Xfuu9Vh9BFJiX9hHVTdNpWy42/cW8JVJNTmlxbH2B3WVkup6OKf09bhdNnKlnBeCEg7lAEQf"
    "3So6c+x1fiTO34byvu1y4NOpXPtK+Vt8CHNsD03YcungUQzaBsfaL8nbxhUza1pdQ2nMtGNq5ly+J4u5zf8Anzeb94f42JdwZ5Hi"
    "uhwHhz6PrfBdZcUdUpHiP0t2ZvPz/Zbct7pdOPd2isHNlncCAQQ+Mgg4EER5hcGbevZH/wAl+Wt4pdR27VBUAPEs5DgCC18ZBBwI"
    "OzNwVoRkE+8fJ/ePXDPakfks+avy21wa/tvZ7cpfxYXRi0KmhwfN2uZ1FDB1a3E/v71XDpcB+aTzt6qcNRm3UeyxenHzS8y9ldi/"
    "wlXByFPhSXC8e6W09rtyPvVxmb1V0eEdN2tk+1XWh1ra8TblL+Ar8ej08WDpe0t6iUnffpYep7v8Dze9VjFOK7/1PkuRfhLK/wCL"
    "8j71cb4qrrW2dN/rJ9qlqHSdtx1u4v4QVOLVJ4sGx9od1lokIxjfDlFFQKUkm7iQNwG5XKZ3DxatgfoPM9ovyffrpw1tVMCZWRsH"
    "AA1wd9Zu42C1fDVbUflt239Ch3Vd44dPc2GgMdQ4ZvkcefEARk1pjLec7hJBs3DM3t1yjME5NSmwLRvFVxVxSjcCRJAGicBgQkby"
    "dZPM2CezlIfaX/OR9W1qdux6f4+lfJXGbH+P0U6jRL8f5Pv1QGs1A+SLzO66/9k="
)


@pytest.fixture(autouse=True)
def couchlite_only(couch):
    if couch.get("/").json().get("vendor", {}).get("name") != "couchlite":
        pytest.skip("the photo gallery is couchlite's")


def api(db):
    return f"/_photos/api/db/{db}"


def upload(couch, db, name, body, **headers):
    return couch.request("POST", f"{api(db)}/upload", params={"name": name, "type": "image/jpeg"}, data=body,
                         headers=headers)


def make_user(couch, name, password="secret123"):
    r = couch.put(f"/_users/org.couchdb.user:{name}",
                  json={"name": name, "password": password, "type": "user", "roles": []})
    assert r.status_code in (201, 202), r.text
    return (name, password)


def test_json_clients_see_the_welcome_unchanged(couch):
    for accept in (None, "application/json", "*/*"):
        headers = {"Accept": accept} if accept else {}
        r = requests.get(couch.url("/"), headers=headers, timeout=10)
        assert r.headers["Content-Type"].startswith("application/json")
        assert r.json()["couchdb"] == "Welcome"


def test_browsers_get_a_welcome_page_linking_to_the_photos(couch):
    r = requests.get(couch.url("/"), headers={"Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"},
                     timeout=10)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/html")
    assert 'href="/_photos/"' in r.text
    assert r.headers["Vary"] == "Accept"


def test_gallery_page_and_assets_carry_a_strict_csp(couch):
    for path in ("/_photos/", "/_photos/app.js", "/_photos/app.css"):
        r = requests.get(couch.url(path), timeout=10)
        assert r.status_code == 200, path
        csp = r.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert requests.get(couch.url("/_photos/app.js"), timeout=10).headers["Content-Type"].startswith(
        "text/javascript")


def test_gallery_path_traversal_finds_nothing(couch):
    for path in ("/_photos/..%2F..%2Fetc%2Fpasswd", "/_photos/nope.js", "/_photos/app.js/x",
                 "/_photos/api/nope", "/_photos/api/db/_users/photos"):
        r = couch.raw("GET", path)
        assert r.status_code == 404, path
        assert r.json()["error"] == "not_found"


def test_upload_uses_the_push_id_scheme_and_stores_a_file_once(couch, db):
    body = TINY_JPEG
    r = upload(couch, db, "tiny photo é.jpg", body)
    assert r.status_code == 201, r.text
    doc_id = r.json()["id"]
    assert doc_id == "photo-" + hashlib.sha256(body).hexdigest()[:32]
    doc = couch.get(f"/{db}/{doc_id}").json()
    assert doc["type"] == "photo" and doc["name"] == "tiny photo é.jpg" and doc["size"] == len(body)
    assert "taken" in doc
    att = doc["_attachments"]["tiny photo é.jpg"]
    assert att["length"] == len(body) and att["content_type"] == "image/jpeg"
    assert att["digest"] == "md5-" + base64.b64encode(hashlib.md5(body).digest()).decode()
    again = upload(couch, db, "other name.jpg", body)
    assert again.status_code == 200 and again.json()["existing"] is True and again.json()["id"] == doc_id
    assert couch.get(f"/{db}").json()["doc_count"] == 1


def test_upload_after_delete_writes_the_photo_again(couch, db):
    first = upload(couch, db, "a.jpg", TINY_JPEG).json()
    assert couch.delete(f"/{db}/{first['id']}", params={"rev": first["rev"]}).status_code == 200
    again = upload(couch, db, "a.jpg", TINY_JPEG)
    assert again.status_code == 201
    assert again.json()["rev"].startswith("3-")


def test_upload_refuses_bad_names(couch, db):
    assert upload(couch, db, "_hidden.jpg", TINY_JPEG).status_code == 400
    r = couch.post(f"{api(db)}/upload", data=TINY_JPEG)
    assert r.status_code == 400 and r.json()["error"] == "bad_request"


def test_listing_is_newest_first_and_pages(couch, db):
    ids = []
    for i in range(5):
        ids.append(upload(couch, db, f"p{i}.jpg", TINY_JPEG + bytes([i])).json()["id"])
    page = couch.get(f"{api(db)}/photos", params={"limit": 2}).json()
    assert [row["id"] for row in page["rows"]] == ids[::-1][:2]
    assert page["next"] is not None and page["update_seq"] >= 5
    seen = [row["id"] for row in page["rows"]]
    while page["next"] is not None:
        page = couch.get(f"{api(db)}/photos", params={"limit": 2, "before": page["next"]}).json()
        seen += [row["id"] for row in page["rows"]]
    assert seen == ids[::-1]
    row = couch.get(f"{api(db)}/photo/{ids[0]}").json()
    assert row["fields"]["name"] == "p0.jpg" and row["attachments"][0]["name"] == "p0.jpg"


def test_thumbnail_is_a_cached_jpeg_and_a_corrupt_image_a_placeholder(couch, db):
    good = upload(couch, db, "good.jpg", TINY_JPEG).json()["id"]
    r = couch.get(f"{api(db)}/thumb/{good}/good.jpg", params={"size": 32})
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/jpeg"
    assert r.content[:3] == b"\xff\xd8\xff"
    etag = r.headers["ETag"]
    assert couch.get(f"{api(db)}/thumb/{good}/good.jpg", params={"size": 32},
                     headers={"If-None-Match": etag}).status_code == 304
    bad = upload(couch, db, "bad.jpg", b"\xff\xd8\xff" + b"not really a jpeg" * 50).json()["id"]
    r = couch.get(f"{api(db)}/thumb/{bad}/bad.jpg")
    assert r.status_code == 200 and r.headers["Content-Type"] == "image/svg+xml"
    assert couch.get(f"{api(db)}/thumb/{good}/missing.jpg").status_code == 404


def test_download_names_any_file_with_rfc5987(couch, db):
    name = 'quote " back\\slash ü 写真.jpg'
    doc_id = upload(couch, db, name, TINY_JPEG).json()["id"]
    r = couch.raw("GET", f"{api(db)}/download/{doc_id}/" + requests.utils.quote(name, safe=""))
    assert r.status_code == 200 and r.content == TINY_JPEG
    disposition = r.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="quote _ back_slash _ __.jpg"; ')
    assert disposition.endswith("filename*=UTF-8''quote%20%22%20back%5Cslash%20%C3%BC%20%E5%86%99%E7%9C%9F.jpg")
    assert r.headers["Content-Security-Policy"] == "sandbox"


def test_delete_needs_the_current_rev(couch, db):
    made = upload(couch, db, "d.jpg", TINY_JPEG).json()
    assert couch.delete(f"{api(db)}/doc/{made['id']}").status_code == 409
    assert couch.delete(f"{api(db)}/doc/{made['id']}", params={"rev": "1-" + "0" * 32}).status_code == 409
    r = couch.delete(f"{api(db)}/doc/{made['id']}", params={"rev": made["rev"]})
    assert r.status_code == 200 and r.json()["rev"].startswith("2-")
    assert couch.get(f"/{db}/{made['id']}").status_code == 404


def test_cross_site_upload_refused(couch, db):
    r = upload(couch, db, "evil.jpg", TINY_JPEG, Origin="http://evil.example")
    assert r.status_code == 403 and r.json()["error"] == "forbidden"
    assert couch.get(f"/{db}").json()["doc_count"] == 0


def test_dns_rebound_page_cannot_upload_or_delete_with_a_matching_host(couch, db):
    """DNS rebinding: a page on http://evil.example/ re-points evil.example at this server; the browser then
    sends `Host: evil.example` and `Origin: http://evil.example`, which match each other. The server is not
    evil.example (no --allowed-hosts names it, and a name can be rebound), so the gallery refuses the write."""
    made = upload(couch, db, "d.jpg", TINY_JPEG).json()
    rebound = {"Host": "evil.example", "Origin": "http://evil.example"}
    r = upload(couch, db, "evil.jpg", TINY_JPEG, **rebound)
    assert r.status_code == 403 and r.json()["error"] == "forbidden", r.text
    r = couch.delete(f"{api(db)}/doc/{made['id']}", params={"rev": made["rev"]}, headers=rebound)
    assert r.status_code == 403 and r.json()["error"] == "forbidden", r.text
    assert couch.get(f"/{db}").json()["doc_count"] == 1


def test_same_site_other_port_delete_refused(couch, db):
    made = upload(couch, db, "d.jpg", TINY_JPEG).json()
    host = couch.base.split("//", 1)[1]
    r = couch.delete(f"{api(db)}/doc/{made['id']}", params={"rev": made["rev"]},
                     headers={"Origin": "http://" + host.rsplit(":", 1)[0] + ":1", "Sec-Fetch-Site": "same-site"})
    assert r.status_code == 403
    assert couch.get(f"/{db}/{made['id']}").status_code == 200


def test_cookie_upload_without_origin_refused(couch, db):
    """A cookie alone (what a cross-site form would carry) is not enough to change data."""
    session = requests.Session()
    r = session.post(couch.url("/_session"), json={"name": couch.user, "password": couch.password}, timeout=10)
    assert r.status_code == 200
    r = session.post(couch.url(f"{api(db)}/upload"), params={"name": "c.jpg"}, data=TINY_JPEG, timeout=10)
    assert r.status_code == 403
    host = couch.base.split("//", 1)[1]
    r = session.post(couch.url(f"{api(db)}/upload"), params={"name": "c.jpg"}, data=TINY_JPEG, timeout=10,
                     headers={"Origin": "http://" + host})
    assert r.status_code == 201


def test_gallery_lists_only_readable_databases(couch, db_factory):
    shared = db_factory("shared")
    private = db_factory("private")
    reader = make_user(couch, "gallery-" + uuid.uuid4().hex[:8])
    assert couch.put(f"/{shared}/_security", json={
        "admins": {"names": [], "roles": []}, "members": {"names": [reader[0]], "roles": []}}).status_code == 200
    r = requests.get(couch.url("/_photos/api/dbs"), auth=reader, timeout=10).json()
    assert r["user"]["name"] == reader[0]
    assert shared in r["databases"] and private not in r["databases"]
    assert requests.get(couch.url(f"{api(private)}/photos"), auth=reader, timeout=10).status_code == 403
    assert requests.get(couch.url(f"{api(private)}/photos"), timeout=10).status_code == 401
    assert requests.get(couch.url(f"{api(shared)}/photos"), auth=reader, timeout=10).status_code == 200
    admin_view = couch.get("/_photos/api/dbs").json()["databases"]
    assert shared in admin_view and private in admin_view


def test_renamed_text_file_upload_is_refused_with_its_name(couch, db):
    """Issue 36, item 3: photo or video by its bytes, never by its name or type. A text file named .jpg and sent as
    image/jpeg is refused (415) with its name and why, and nothing of it is stored or listed."""
    r = upload(couch, db, "notes.jpg", b"shopping list: milk, eggs\n" * 100)
    assert r.status_code == 415, r.text
    assert r.json()["error"] == "bad_content_type" and "notes.jpg is not a photo or video" in r.json()["reason"]
    listing = couch.get(f"{api(db)}/photos").json()
    assert listing["rows"] == []
    # The stored type is the bytes' format: a JPEG claimed as a PNG is stored as a JPEG.
    made = upload(couch, db, "really a jpeg.png", TINY_JPEG).json()
    doc = couch.get(f"/{db}/{made['id']}").json()
    assert doc["_attachments"]["really a jpeg.png"]["content_type"] == "image/jpeg"
