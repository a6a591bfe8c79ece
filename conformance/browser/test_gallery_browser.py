"""The photo gallery in a real browser, as one visit: sign in, upload, look, play, download,
delete, watch another client's photo arrive, and the attacks it must shrug off. Tests run in file
order on one tab (conftest.py); each names what it proves."""
import datetime
import http.server
import os
import threading
import time
import urllib.parse

import pytest
import requests

from conftest import ALICE


def wait_until(predicate, timeout=30, interval=0.1, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def wait_js(page, expression, arg=None, timeout=30, what=None):
    """Polls `expression` (a function) in the page: Playwright's own waiting compiles its
    predicate with `new Function`, which the gallery's CSP (rightly) forbids."""
    return wait_until(lambda: page.evaluate(expression, arg), timeout=timeout, what=what or expression)


def tile(page, name):
    return page.locator(".tile", has=page.locator(".label", has_text=name))


def test_welcome_page_links_to_photos_and_json_clients_see_the_welcome(server, page):
    welcome = requests.get(server.base + "/", headers={"Accept": "application/json"}).json()
    assert welcome["couchdb"] == "Welcome"
    page.goto(server.base + "/")
    page.click("#photos-link")
    page.wait_for_selector("#signin")
    assert page.url.startswith(server.base + "/_photos/")


def test_sign_in(server, page):
    page.fill("#name", "alice")
    page.fill("#password", "wrong")
    page.click("#signin button[type=submit]")
    wait_js(page, "() => document.getElementById('signin-error').textContent.length > 0")
    assert "Wrong name or password" in page.text_content("#signin-error")
    page.fill("#password", ALICE[1])
    page.click("#signin button[type=submit]")
    page.wait_for_selector("#dbs")
    assert page.text_content("#who") == "alice"


def test_user_who_may_not_read_a_database_does_not_see_it(server, page):
    names = page.locator("#dbs .album-name").all_text_contents()
    assert "photos" in names
    assert "secret" not in names
    # Nor can the page's own API be asked for it, nor the URL typed in.
    assert page.request.get(server.base + "/_photos/api/db/secret/photos").status == 403
    page.goto(server.base + "/_photos/#/db/secret")
    page.wait_for_selector("#page-error")
    assert page.locator(".tile").count() == 0


def test_upload_several_files_with_progress(server, page, files):
    page.goto(server.base + "/_photos/#/db/photos")
    page.wait_for_selector("#grid", state="attached")
    page.wait_for_selector("#more", state="attached")
    # Record every value each progress bar takes (the bars reflect `value` as an attribute).
    page.evaluate("""() => {
        window.progressSeen = {};
        new MutationObserver((records) => {
            for (const r of records) {
                const li = r.target.closest && r.target.closest('li');
                if (!li || r.target.tagName !== 'PROGRESS') continue;
                (window.progressSeen[li.dataset.name] ||= []).push(Number(r.target.value));
            }
        }).observe(document.getElementById('uploads'), {attributes: true, subtree: true});
    }""")
    paths = [files["jpeg"], files["png"], files["hostile"], files["video"]]
    page.set_input_files("#files", paths)
    names = [os.path.basename(p) for p in paths]
    for name in names:
        row = page.locator("#uploads li", has=page.locator(".name", has_text=name))
        row.locator(".state", has_text="done").wait_for(timeout=120_000)
    seen = page.evaluate("window.progressSeen")
    video = seen[os.path.basename(files["video"])]
    assert any(0 < v < 100 for v in video), f"no intermediate progress for the video: {video}"
    assert video[-1] == 100
    for name in names:
        tile(page, name).first.wait_for()
    # Stored as `couchlite push` stores them: one document per file, id from the SHA-256.
    import hashlib
    docs = server.admin("GET", "/photos/_all_docs?include_docs=true").json()["rows"]
    by_name = {row["doc"]["name"]: row for row in docs}
    assert sorted(by_name) == sorted(names)
    for path in paths:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        row = by_name[os.path.basename(path)]
        assert row["id"] == "photo-" + digest[:32]
        assert row["doc"]["size"] == os.path.getsize(path)
        assert row["doc"]["type"] == "photo"
    assert by_name[os.path.basename(files["video"])]["doc"]["size"] == 50 * 1024 * 1024


def test_uploading_the_same_file_again_stores_it_once(server, page, files):
    before = server.admin("GET", "/photos").json()["doc_count"]
    page.set_input_files("#files", [files["jpeg"]])
    page.locator("#uploads li .state", has_text="already there").wait_for()
    assert server.admin("GET", "/photos").json()["doc_count"] == before


def test_grid_shows_server_thumbnails_newest_first(server, page, files, screenshots):
    page.reload()
    page.wait_for_selector(".tile")
    ids = page.eval_on_selector_all(".tile", "tiles => tiles.map(t => t.dataset.id)")
    api = page.request.get(server.base + "/_photos/api/db/photos/photos").json()
    # Newest taken first (the same moment: newest arrival first), as the listing orders them.
    def taken(row):
        return datetime.datetime.fromisoformat((row.get("taken") or row["fields"]["taken"]).replace("Z", "+00:00"))
    expected = sorted(api["rows"], key=lambda row: (taken(row), row["seq"]), reverse=True)
    assert ids == [row["id"] for row in expected]
    # Photo tiles show a server-made JPEG, loaded; the video is a video tile.
    for key in ("jpeg", "png"):
        img = tile(page, os.path.basename(files[key])).locator("img")
        img.scroll_into_view_if_needed()
        wait_until(lambda: img.evaluate("i => i.complete && i.naturalWidth > 0"), what="the thumbnail")
        src = img.get_attribute("src")
        assert "/thumb/" in src
        thumb = page.request.get(server.base + src)
        assert thumb.headers["content-type"] == "image/jpeg"
        assert max(img.evaluate("i => [i.naturalWidth, i.naturalHeight]")) <= 320
    assert tile(page, os.path.basename(files["video"])).get_attribute("class") == "tile video"
    page.screenshot(path=os.path.join(screenshots, "grid.png"))


def test_hostile_name_rendered_as_text(server, page, files):
    name = os.path.basename(files["hostile"])
    label = tile(page, name).locator(".label")
    assert label.text_content() == name
    # No element was made from the name: no <img src=x>, no handler ran, no script error.
    assert page.locator("img[src='x']").count() == 0
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0
    tile(page, name).click()
    page.wait_for_selector("#viewer:not([hidden])")
    assert page.text_content("#v-name") == name
    assert page.dialogs == [] and page.errors == []
    page.click("#close")


def test_open_photo_view_with_fields_and_next_previous(server, page, files, screenshots):
    name = os.path.basename(files["jpeg"])
    tile(page, name).click()
    page.wait_for_selector("#viewer:not([hidden]) #full")
    wait_js(page, "() => document.getElementById('full').naturalWidth === 1600")
    assert page.text_content("#v-name") == name
    fields = page.locator("#v-fields").text_content()
    assert "taken" in fields and "size" in fields and "photo-" in fields
    assert "KB" in page.text_content("#v-meta")
    page.screenshot(path=os.path.join(screenshots, "photo.png"))
    order = page.eval_on_selector_all(".tile", "tiles => tiles.map(t => t.dataset.id)")
    current = page.url.rsplit("/", 1)[1]
    index = order.index(urllib.parse.unquote(current))
    if index + 1 < len(order):
        page.keyboard.press("ArrowRight")
        page.wait_for_url("**/photo/" + urllib.parse.quote(order[index + 1], safe=""))
        page.click("#prev")
        page.wait_for_url("**/photo/" + urllib.parse.quote(order[index], safe=""))
    page.click("#close")
    page.wait_for_selector("#viewer", state="hidden")


def test_play_video_with_a_seek(server, page, files):
    ranges = []
    page.on("response", lambda r: ranges.append(r.status) if "/photos/photo-" in r.url and
            r.request.resource_type == "media" else None)
    tile(page, os.path.basename(files["video"])).click()
    page.wait_for_selector("#player")
    page.evaluate("() => { const v = document.getElementById('player'); v.muted = true; return v.play(); }")
    wait_js(page, "() => document.getElementById('player').currentTime > 0.5")
    page.evaluate("""() => new Promise((done) => {
        const v = document.getElementById('player');
        v.addEventListener('seeked', done, {once: true});
        v.currentTime = 15;
    })""")
    wait_js(page, "() => document.getElementById('player').currentTime >= 15.2")
    assert page.evaluate("document.getElementById('player').error") is None
    assert 206 in ranges, f"no Range request answered 206: {ranges}"
    page.click("#close")


def test_download_has_its_name_and_bytes(server, page, files):
    name = os.path.basename(files["png"])
    tile(page, name).click()
    page.wait_for_selector("#viewer:not([hidden])")
    with page.expect_download() as info:
        page.click("#download")
    download = info.value
    assert download.suggested_filename == name
    with open(download.path(), "rb") as got, open(files["png"], "rb") as want:
        assert got.read() == want.read()
    page.click("#close")


def test_delete_after_confirmation(server, page, files):
    name = os.path.basename(files["jpeg"])
    doc_id = tile(page, name).get_attribute("data-id")
    tile(page, name).click()
    page.wait_for_selector("#viewer:not([hidden])")
    page.click("#delete")
    page.wait_for_selector("#confirm[open]")
    page.click("#confirm button[value=cancel]")
    assert server.admin("GET", "/photos/" + doc_id).status_code == 200
    page.click("#delete")
    page.click("#confirm-ok")
    page.wait_for_selector("#viewer", state="hidden")
    wait_until(lambda: tile(page, name).count() == 0, what="the deleted tile to go")
    gone = server.admin("GET", "/photos/" + doc_id)
    assert gone.status_code == 404 and gone.json()["reason"] == "deleted"


def test_document_written_by_another_client_appears_without_reload(server, page, files):
    page.evaluate("window.sameVisit = 'yes'")
    with open(files["jpeg"], "rb") as f:
        body = f.read()
    created = server.admin("PUT", "/photos/from-elsewhere", json={"type": "photo", "name": "from elsewhere.jpg"})
    rev = created.json()["rev"]
    assert server.admin("PUT", f"/photos/from-elsewhere/from%20elsewhere.jpg?rev={rev}", data=body,
                        headers={"Content-Type": "image/jpeg"}).status_code == 201
    tile(page, "from elsewhere.jpg").wait_for(timeout=30_000)
    assert page.evaluate("window.sameVisit") == "yes"
    # And a deletion elsewhere takes it away.
    rev = server.admin("GET", "/photos/from-elsewhere").json()["_rev"]
    assert server.admin("DELETE", f"/photos/from-elsewhere?rev={rev}").status_code == 200
    wait_until(lambda: tile(page, "from elsewhere.jpg").count() == 0, what="the tile to go")
    assert page.evaluate("window.sameVisit") == "yes"


class EvilSite(http.server.BaseHTTPRequestHandler):
    """A page on another port of the same host: the same *site* for SameSite cookies."""
    target = ""

    def do_GET(self):
        page = (f"<!doctype html><form id=f method=post enctype=text/plain action='{self.target}'>"
                "<input name=x value=y></form><script>document.getElementById('f').submit()</script>")
        body = page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_cross_site_post_refused(server, page, context):
    before = server.admin("GET", "/photos").json()["doc_count"]
    EvilSite.target = server.base + "/_photos/api/db/photos/upload?name=evil.jpg"
    evil = http.server.HTTPServer(("127.0.0.1", 0), EvilSite)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        attack = context.new_page()
        with attack.expect_response(lambda r: "/upload" in r.url) as info:
            attack.goto(f"http://127.0.0.1:{evil.server_port}/")
        response = info.value
        assert response.status == 403
        assert response.json()["error"] == "forbidden"
        # The cookie did go along (same site): only the origin check stopped it.
        assert "AuthSession" in (response.request.header_value("cookie") or "")
        attack.close()
    finally:
        evil.shutdown()
    assert server.admin("GET", "/photos").json()["doc_count"] == before
    rows = server.admin("GET", "/photos/_all_docs?include_docs=true").json()["rows"]
    assert all(row["doc"].get("name") != "evil.jpg" for row in rows)


def test_csp_blocks_inline_script(page):
    """Even a script element that reached the DOM would not run: the policy allows no inline code."""
    page.evaluate("""() => {
        const s = document.createElement('script');
        s.textContent = 'window.pwned = true';
        document.body.append(s);
    }""")
    assert page.evaluate("() => window.pwned") is None
    page.errors.clear()


def test_no_script_errors_during_the_visit(page):
    assert page.errors == []
    assert page.dialogs == []
