"""The gallery's timeline, album list and resumable uploads in a real browser, signed in as the server admin in
a browser set to Berlin time: photos seeded with explicit `taken` dates (as `couchlite push` writes them, in the
camera's own offset) land under the right day headers, the album list shows cover, counts and dates, and an
upload cut at 60 % (by a link in between) continues from the byte the server has, both by itself and when the
file is picked again after a reload."""
import base64
import datetime
import hashlib
import os
import subprocess
import zoneinfo

import pytest

from conftest import signed_in_tab
from tcp_link import AppendCut, Link
from test_gallery_browser import wait_js

DB = "timeline"
ZONE = zoneinfo.ZoneInfo("Europe/Berlin")


def long_date(day):
    return f"{day.strftime('%A')}, {day.day} {day.strftime('%B')} {day.year}"


@pytest.fixture(scope="module")
def days():
    today = datetime.datetime.now(ZONE).date()
    return {"today": today, "yesterday": today - datetime.timedelta(days=1)}


@pytest.fixture(scope="module")
def seeded(server, workdir, days):
    """Six documents with explicit `taken` (their files carry no EXIF date, so the document's is the one listed): two today (one written at 00:05 in Tokyo, so its instant is still
    yesterday in Berlin), one yesterday at 23:30 in California (today already in Berlin, yet yesterday for the
    camera), two on 12 May 2026 (a photo and a video) and one on New Year's Eve 2025."""
    media = os.path.join(workdir, "timeline-media")
    os.makedirs(media, exist_ok=True)
    today, yesterday = days["today"].isoformat(), days["yesterday"].isoformat()
    docs = [
        ("tokyo-midnight", f"{today}T00:05:00+09:00", "testsrc=size=640x480", "image/jpeg"),
        ("morning", f"{today}T08:00:00+00:00", "mandelbrot=size=640x480", "image/jpeg"),
        ("california-evening", f"{yesterday}T23:30:00-07:00", "smptebars=size=640x480", "image/jpeg"),
        ("may", "2026-05-12T14:03:11+02:00", "rgbtestsrc=size=640x480", "image/jpeg"),
        ("may-clip", "2026-05-12T09:00:00+02:00", "testsrc2=size=320x240:rate=10", "video/mp4"),
        ("new-year", "2025-12-31T23:59:00-05:00", "cellauto=size=640x480", "image/jpeg"),
    ]
    assert server.admin("PUT", "/" + DB).status_code == 201
    for name, taken, source, content_type in docs:
        path = os.path.join(media, name + (".mp4" if content_type == "video/mp4" else ".jpg"))
        extra = ["-t", "2", "-pix_fmt", "yuv420p"] if content_type == "video/mp4" else ["-frames:v", "1"]
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", source, *extra, path], check=True,
                       timeout=120)
        data = open(path, "rb").read()
        file_name = os.path.basename(path)
        r = server.admin("PUT", f"/{DB}/{name}", json={
            "type": "photo", "name": file_name, "taken": taken, "size": len(data),
            "_attachments": {file_name: {"content_type": content_type, "data": base64.b64encode(data).decode()}}})
        assert r.status_code == 201, r.text
    return docs


@pytest.fixture(scope="module")
def tab(browser, server, seeded):
    with signed_in_tab(browser, server, timezone_id="Europe/Berlin", locale="en-GB") as tab:
        yield tab


def sections(page):
    return page.evaluate("""() => Array.from(document.querySelectorAll('#grid section.day')).map((s) => ({
        title: s.querySelector('.day-title').textContent,
        ids: Array.from(s.querySelectorAll('.tile')).map((t) => t.dataset.id)}))""")


def test_album_list_shows_cover_counts_and_date_range(server, tab, days, screenshots):
    tab.goto(server.base + "/_photos/#/")
    album = tab.locator(f'#dbs li[data-name="{DB}"]')
    album.wait_for()
    assert album.locator(".album-counts").text_content() == "5 photos · 1 video"
    today = days["today"]
    assert album.locator(".album-dates").text_content() == (
        f"31 December 2025 – {today.day} {today.strftime('%B')} {today.year}")
    # The cover is the newest photo by the moment it was taken: 08:00 UTC today.
    cover = album.locator(".cover img")
    assert "/thumb/morning/" in cover.get_attribute("src")
    wait_js(tab, "(img) => img.complete && img.naturalWidth > 0", cover.element_handle(), what="the cover")
    tab.screenshot(path=os.path.join(screenshots, "albums.png"))


def test_timeline_headers_group_photos_by_the_cameras_day(server, tab, days, screenshots):
    tab.goto(server.base + f"/_photos/#/db/{DB}")
    tab.wait_for_selector("#grid section.day")
    wait_js(tab, "() => document.querySelectorAll('#grid .tile').length === 6", what="six tiles")
    assert sections(tab) == [
        {"title": "Today", "ids": ["morning", "tokyo-midnight"]},
        {"title": "Yesterday", "ids": ["california-evening"]},
        {"title": "Tuesday, 12 May 2026", "ids": ["may", "may-clip"]},
        {"title": "Wednesday, 31 December 2025", "ids": ["new-year"]},
    ]
    assert long_date(datetime.date(2026, 5, 12)) == "Tuesday, 12 May 2026"
    # The video tile is a video tile with its thumbnail and the duration badge.
    clip = tab.locator('.tile[data-id="may-clip"]')
    assert clip.get_attribute("class") == "tile video"
    assert clip.locator(".duration").text_content() == "▶ 0:02"
    # Its thumbnail is a frame of the video (a JPEG the server made), not the placeholder.
    poster = clip.locator("img")
    wait_js(tab, "(i) => i.complete && i.naturalWidth > 0", poster.element_handle(), what="the poster")
    assert tab.request.get(server.base + poster.get_attribute("src")).headers["content-type"] == "image/jpeg"
    for img in tab.locator(".tile.image img").all():
        wait_js(tab, "(i) => i.complete && i.naturalWidth > 0", img.element_handle(), what="a thumbnail")
    tab.screenshot(path=os.path.join(screenshots, "timeline.png"))


def test_viewer_shows_the_date_taken_in_the_cameras_offset(server, tab, screenshots):
    tab.click('.tile[data-id="may"]')
    tab.wait_for_selector("#viewer:not([hidden])")
    wait_js(tab, "() => { const i = document.getElementById('full'); return i && i.complete && i.naturalWidth; }",
            what="the photo")
    assert tab.text_content('#v-info dd[data-field="taken"]') == "Tuesday, 12 May 2026, 14:03 (UTC+02:00)"
    assert tab.text_content('#v-info dd[data-field="size"]') == "640 × 480"
    tab.screenshot(path=os.path.join(screenshots, "photo.png"))
    tab.keyboard.press("Escape")


def make_file(workdir, name, size):
    path = os.path.join(workdir, name)
    with open(path, "wb") as f:
        # An MP4's first box, then noise: the gallery takes only what its bytes show to be a photo or video.
        head = b"\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2"
        f.write(head + os.urandom(size - len(head)))
    return path


def upload_row(tab, name):
    return tab.locator("#uploads li", has=tab.locator(".name", has_text=name))


def stored(server, path):
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    doc_id = "photo-" + digest[:32]
    body = server.admin("GET", f"/{DB}/{doc_id}/{os.path.basename(path)}").content
    return hashlib.sha256(body).hexdigest() == digest


def pick_through(tab, link, path):
    """Opens the album through `link` and picks `path` to upload."""
    tab.goto(f"http://127.0.0.1:{link.port}/_photos/#/db/{DB}")
    tab.wait_for_selector("#grid", state="attached")
    tab.set_input_files("#files", [path])


def assert_resumed_at_the_cut(server, row, path):
    """The page asked the server where to go on and went on from there (what it had of the 60 %), not from zero,
    and what is stored is the file."""
    size = os.path.getsize(path)
    resumed = [int(n) for n in row.get_attribute("data-resumed-from").split(",")]
    assert 0.5 * size < resumed[0] <= 0.6 * size
    assert stored(server, path)


def test_upload_cut_at_60_percent_resumes_from_the_servers_offset(server, tab, workdir):
    path = make_file(workdir, "cut-at-60.bin", 48 * 1024 * 1024)
    size = os.path.getsize(path)
    # The page talks to the server through a link that drops the connection carrying the upload at 60 %.
    cut = AppendCut(after=size * 6 // 10)
    link = Link(server.port, cut=cut)
    try:
        pick_through(tab, link, path)
        row = upload_row(tab, os.path.basename(path))
        row.locator(".state", has_text="done").wait_for(timeout=120_000)
    finally:
        link.close()
    assert cut.done.is_set()
    assert_resumed_at_the_cut(server, row, path)


def test_same_file_picked_again_after_a_reload_resumes(server, tab, workdir):
    path = make_file(workdir, "picked-again.bin", 48 * 1024 * 1024)
    size = os.path.getsize(path)
    # This link holds the upload at 60 %: the page goes on sending into the void until it is reloaded, and its
    # upload loop is gone; the server keeps what it received.
    cut = AppendCut(after=size * 6 // 10, hold=True)
    link = Link(server.port, cut=cut)
    try:
        pick_through(tab, link, path)
        assert cut.done.wait(120)
        tab.reload()
        tab.wait_for_selector("#grid", state="attached")
        tab.set_input_files("#files", [path])
        row = upload_row(tab, os.path.basename(path))
        row.locator(".state", has_text="done").wait_for(timeout=120_000)
    finally:
        link.close()
    assert_resumed_at_the_cut(server, row, path)


def test_no_script_errors(tab):
    assert tab.errors == []
