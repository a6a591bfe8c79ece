"""The gallery signed in with `couchlite receive`'s one-time credentials, in a real browser: the page is
a send-only drop (choose photos, watch them go), the photos land in the receive folder, and nothing of
the album is shown or reachable."""
import os
import sys
import tempfile
import shutil

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from receive_support import Receiver, wait_for_files  # noqa: E402

from test_gallery_browser import wait_js  # noqa: E402


@pytest.fixture
def receiver():
    root = tempfile.mkdtemp(prefix="couchlite-drop-browser-")
    r = Receiver(os.environ["COUCHLITE_BIN"], root)
    r.start()
    yield r
    r.stop()
    shutil.rmtree(root, ignore_errors=True)


def test_one_time_credentials_sign_in_to_a_send_only_drop_page(receiver, browser, files):
    context = browser.new_context(viewport={"width": 390, "height": 844})   # a phone
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(receiver.info["browser"])
        page.wait_for_selector("#signin")
        page.fill("#name", receiver.auth[0])
        page.fill("#password", receiver.auth[1])
        page.click("#signin button[type=submit]")
        page.wait_for_selector("#drop-note")
        assert page.locator("#dbs").count() == 0 and page.locator("#grid").count() == 0
        page.set_input_files("#files", [files["jpeg"], files["png"]])
        wait_js(page, "() => document.querySelectorAll('#uploads li.done').length === 2", timeout=60,
                what="both uploads done")
        names = wait_for_files(receiver.out, 2)
        assert names == sorted(os.path.basename(files[k]) for k in ("jpeg", "png"))
        for key in ("jpeg", "png"):
            with open(files[key], "rb") as sent, open(os.path.join(receiver.out, os.path.basename(files[key])),
                                                      "rb") as saved:
                assert sent.read() == saved.read()
        # Typing an album URL shows the drop page again, never the photos.
        page.goto(receiver.info["browser"] + "#/db/" + receiver.db)
        page.wait_for_selector("#drop-note")
        assert page.locator(".tile").count() == 0
        assert page.request.get(f"{receiver.base}/_photos/api/db/{receiver.db}/photos").status == 403
        assert errors == []
    finally:
        context.close()
