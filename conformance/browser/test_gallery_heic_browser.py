"""Photos as iPhones write them, in a real browser that cannot decode HEIC itself (Chromium): a HEIC gets a
thumbnail in the grid and a full-size JPEG preview in the viewer while Download still gives the original bytes,
a grid-tiled, rotated HEIC (an iPhone's structure) is shown whole and upright, and a Live Photo (a HEIC still and
its MOV in one document) plays its video from the viewer. The samples are the committed ones of
Tests/MediaTests/Samples (made with heif-enc and ffmpeg; see its README)."""
import base64
import os

import pytest

from conftest import signed_in_tab
from test_gallery_browser import wait_js

DB = "iphone"
SAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "Tests", "MediaTests", "Samples")


def sample(name):
    with open(os.path.join(SAMPLES, name), "rb") as f:
        return f.read()


def inline(data, content_type):
    return {"content_type": content_type, "data": base64.b64encode(data).decode()}


@pytest.fixture(scope="module")
def seeded(server):
    assert server.admin("PUT", "/" + DB).status_code == 201
    r = server.admin("PUT", f"/{DB}/heic", json={
        "type": "photo", "name": "IMG_0001.HEIC",
        "_attachments": {"IMG_0001.HEIC": inline(sample("exif-photo.heic"), "image/heic")}})
    assert r.status_code == 201, r.text
    r = server.admin("PUT", f"/{DB}/grid", json={
        "type": "photo", "name": "IMG_0003.HEIC",
        "_attachments": {"IMG_0003.HEIC": inline(sample("grid-rotated.heic"), "image/heic")}})
    assert r.status_code == 201, r.text
    r = server.admin("PUT", f"/{DB}/live", json={
        "type": "photo", "name": "IMG_0002.HEIC",
        "_attachments": {"IMG_0002.HEIC": inline(sample("live.heic"), "image/heic"),
                         "IMG_0002.MOV": inline(sample("live.mov"), "video/quicktime")}})
    assert r.status_code == 201, r.text


@pytest.fixture(scope="module")
def tab(browser, server, seeded):
    with signed_in_tab(browser, server) as tab:
        yield tab


def loaded(page, selector, what):
    wait_js(page, "(s) => { const i = document.querySelector(s); return !!i && i.complete && i.naturalWidth > 0; }",
            selector, what=what)


def test_heic_is_visible_in_the_grid_and_the_viewer(server, tab):
    tab.goto(server.base + f"/_photos/#/db/{DB}")
    # Chromium cannot decode HEIC: a thumbnail with a width is the server's JPEG, not the original.
    loaded(tab, '.tile[data-id="heic"] img', "the HEIC's thumbnail")
    thumb = tab.get_attribute('.tile[data-id="heic"] img', "src")
    assert tab.request.get(server.base + thumb).headers["content-type"] == "image/jpeg"
    tab.click('.tile[data-id="heic"]')
    tab.wait_for_selector("#viewer:not([hidden])")
    loaded(tab, "#full", "the HEIC in the viewer")
    full = tab.get_attribute("#full", "src")
    assert "/preview/heic/" in full
    # The preview is the photo at its own size (the sample is 320 × 240), not a thumbnail.
    assert tab.evaluate("() => [document.getElementById('full').naturalWidth, "
                        "document.getElementById('full').naturalHeight]") == [320, 240]
    download = tab.request.get(server.base + tab.get_attribute("#download", "href"))
    assert download.body() == sample("exif-photo.heic")
    tab.keyboard.press("Escape")


def test_grid_tiled_rotated_heic_is_shown_whole_and_upright(server, tab):
    """As an iPhone writes it: a grid of tiles turned by irot (two 64 x 64 tiles, shown 64 x 128)."""
    tab.goto(server.base + f"/_photos/#/db/{DB}")
    loaded(tab, '.tile[data-id="grid"] img', "the grid HEIC's thumbnail")
    tab.click('.tile[data-id="grid"]')
    tab.wait_for_selector("#viewer:not([hidden])")
    loaded(tab, "#full", "the grid HEIC in the viewer")
    assert tab.evaluate("() => [document.getElementById('full').naturalWidth, "
                        "document.getElementById('full').naturalHeight]") == [64, 128]
    tab.keyboard.press("Escape")


def test_live_photo_plays_its_video_from_the_viewer(server, tab):
    tab.goto(server.base + f"/_photos/#/db/{DB}")
    tab.click('.tile[data-id="live"]')
    tab.wait_for_selector("#viewer:not([hidden])")
    loaded(tab, "#full", "the Live Photo's still")
    tab.click("#live")
    tab.wait_for_selector("#player")
    assert tab.get_attribute("#player", "src").endswith("/live/IMG_0002.MOV")
    tab.evaluate("() => { const v = document.getElementById('player'); v.muted = true; return v.play(); }")
    wait_js(tab, "() => document.getElementById('player').currentTime > 0.2", what="the Live Photo playing")
    assert tab.evaluate("document.getElementById('player').error") is None
    tab.keyboard.press("Escape")


def test_no_script_errors(tab):
    assert tab.errors == []
