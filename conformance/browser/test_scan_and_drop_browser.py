"""Scan and drop (issue 36, items 1 and 5) in a real browser: the QR code `couchlite receive` writes is decoded with
zbarimg, its URL opened in a phone-sized Chromium signs in at once, and three photos go with no typing; the same
URL in a second browser is refused (one code, one phone), while the next code the receiver shows signs the next
one in. The drop page fits a 360 px phone: one-line header, whole names (an ellipsis in the middle when there is
no room), touch wording, and the signed-out states say what to do."""
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))
from receive_support import Receiver, wait_for_files  # noqa: E402

from test_gallery_browser import wait_js  # noqa: E402

LONG_NAME = "IMG_20260512_143055 Family reunion at the lake house, everyone on the jetty.jpg"


def zbar(png: str) -> str:
    out = subprocess.run(["zbarimg", "--quiet", "--raw", png], capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout.decode().strip()


@pytest.fixture
def drop(request):
    """`drop(*flags)`: a started receiver writing its QR code to `receiver.png`."""
    root = tempfile.mkdtemp(prefix="couchlite-scan-browser-")
    made = []

    def start(*flags):
        png = os.path.join(root, f"code{len(made)}.png")
        receiver = Receiver(os.environ["COUCHLITE_BIN"], os.path.join(root, str(len(made))), "--qr-png", png, *flags)
        made.append(receiver)
        receiver.start()
        receiver.png = png
        return receiver

    yield start
    for receiver in made:
        receiver.stop()
    shutil.rmtree(root, ignore_errors=True)


def phone(browser, **options):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2, **options)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    return context, page


def three_photos(files, folder):
    os.makedirs(folder, exist_ok=True)
    long_copy = os.path.join(folder, LONG_NAME)
    shutil.copyfile(files["jpeg"], long_copy)
    return [long_copy, files["png"], files["hostile"]]


def header_fits(page, width):
    return page.evaluate("""(width) => {
        const bar = document.querySelector('header.bar');
        const out = Array.from(bar.children).filter((c) => c.offsetParent !== null)
            .some((c) => c.getBoundingClientRect().right > width + 0.5);
        return bar.scrollWidth <= width && bar.getBoundingClientRect().height < 56 && !out;
    }""", width)


def test_scanned_qr_code_signs_a_phone_in_and_three_photos_go_with_no_typing(drop, browser, files, screenshots,
                                                                           tmp_path):
    receiver = drop()
    url = zbar(receiver.png)
    assert url == receiver.info["signin_url"] and "/_photos/#signin=" in url and "@" not in url
    context, page = phone(browser)
    try:
        page.goto(url)
        page.wait_for_selector("#drop-note")
        assert "signin=" not in page.url, "the token leaves the address bar at once"
        assert page.locator("#signin").count() == 0, "no sign-in form: the code signed the phone in"
        # Touch wording: nothing to drag on a phone.
        assert "drop files" not in page.inner_text("body").lower()
        assert page.text_content("#choose") == "Choose photos and videos"
        assert page.text_content("#who") == "" and page.is_visible("#signout")
        assert page.evaluate("() => Array.from(document.querySelectorAll('main > *')).every((n) => "
                             "n.textContent !== 'null')"), "nothing missing is drawn as 'null'"
        photos = three_photos(files, str(tmp_path / "phone"))
        page.set_input_files("#files", photos)
        wait_js(page, "() => document.querySelectorAll('#uploads li.done').length === 3", timeout=60,
                what="three uploads done")
        names = wait_for_files(receiver.out, 3)
        assert names == sorted(os.path.basename(p) for p in photos)
        for sent in photos:
            with open(sent, "rb") as a, open(os.path.join(receiver.out, os.path.basename(sent)), "rb") as b:
                assert a.read() == b.read()
        # A text file renamed .jpg is not a photo: listed as not sent, and never reaches the folder.
        notes = tmp_path / "notes.jpg"
        notes.write_text("shopping list: milk, eggs\n")
        page.set_input_files("#files", [str(notes)])
        wait_js(page, "() => document.querySelectorAll('#uploads li.failed').length === 1", timeout=60,
                what="the text file refused")
        refused = page.locator("#uploads li.failed")
        assert refused.get_attribute("data-name") == "notes.jpg"
        assert refused.locator(".state").text_content() == "not sent: not a photo or video"
        assert "notes.jpg is not a photo or video" in refused.locator(".state").get_attribute("title")
        assert sorted(os.listdir(receiver.out)) == names
        # Whole names: the long one keeps its start and its end (with the extension), its middle gives way.
        row = page.locator("#uploads li", has=page.locator(".name", has_text="jetty.jpg"))
        assert row.locator(".name").get_attribute("title") == LONG_NAME
        assert row.locator(".name").text_content() == LONG_NAME
        assert row.locator(".tail").text_content().endswith("jetty.jpg")
        assert page.evaluate("""() => Array.from(document.querySelectorAll('#uploads .name')).every((n) =>
            n.getBoundingClientRect().right <= n.closest('li').getBoundingClientRect().right + 0.5)""")
        short = page.locator("#uploads li", has=page.locator(".name", has_text="café"))
        assert short.locator(".head").evaluate("(n) => n.scrollWidth <= n.clientWidth"), "a short name is whole"
        assert header_fits(page, 390)
        page.screenshot(path=os.path.join(screenshots, "drop-phone-390x844.png"))
        page.set_viewport_size({"width": 360, "height": 780})
        assert header_fits(page, 360), "the header fits a 360 px phone on one line"
        page.set_viewport_size({"width": 390, "height": 844})

        # The same URL in a second browser, after its use: refused, and said so.
        other, second = phone(browser)
        try:
            second.goto(url)
            second.wait_for_selector("#signin")
            wait_js(second, "() => document.getElementById('signin-error').textContent.length > 0")
            assert "signed in a browser already" in second.text_content("#signin-error")
            assert second.locator("#drop-note").count() == 0
            assert not second.is_visible("#signout"), "signed out: no Sign out button"
            assert second.request.get(receiver.base + "/_session").json()["userCtx"]["name"] is None
            assert "Scan the QR code" in second.text_content("#signin-hint")
            second.screenshot(path=os.path.join(screenshots, "drop-phone-used-code-390x844.png"))
            assert second.errors == []
        finally:
            other.close()

        # The receiver shows (and writes) a new code for the next device: here a desktop at 1440x900.
        following = zbar(receiver.png)
        assert following != url and following.startswith(url.partition("#")[0] + "#signin=")
        desk = browser.new_context(viewport={"width": 1440, "height": 900})
        try:
            tab = desk.new_page()
            tab.goto(following)
            tab.wait_for_selector("#drop-note")
            assert tab.text_content("#choose") == "Choose photos…"
            assert tab.text_content("#drop-hint") == "or drop files here"
            desk_photo = str(tmp_path / "from the desk.jpg")
            with open(files["jpeg"], "rb") as src, open(desk_photo, "wb") as dst:
                dst.write(src.read() + b"another photo")
            tab.set_input_files("#files", [desk_photo])
            wait_js(tab, "() => document.querySelectorAll('#uploads li.done').length === 1", timeout=60,
                    what="the desktop's upload")
            tab.screenshot(path=os.path.join(screenshots, "drop-desktop-1440x900.png"))
        finally:
            desk.close()

        # Signing out says how to come back.
        page.click("#signout")
        page.wait_for_selector("#signin")
        assert "scan the QR code on the receiving screen again" in page.text_content("#signin-error")
        assert not page.is_visible("#signout")
        assert page.request.get(receiver.base + "/_session").json()["userCtx"]["name"] is None
        page.screenshot(path=os.path.join(screenshots, "drop-phone-signed-out-390x844.png"))
        assert page.errors == []
    finally:
        context.close()


def test_drop_page_over_https_shows_the_certificate_fingerprint_and_says_when_the_session_ends(drop, browser,
                                                                                              screenshots):
    receiver = drop("--tls", "auto", "--tls-port", "0", "--port", "off", "--ttl", "5s")
    url = zbar(receiver.png)
    assert url.startswith("https://")
    context, page = phone(browser, ignore_https_errors=True)
    try:
        page.goto(url)
        page.wait_for_selector("#drop-fingerprint")
        assert page.text_content("#drop-fingerprint code") == receiver.info["fingerprint_sha256"]
        assert "It ends at" in page.text_content("#drop-note")
        page.screenshot(path=os.path.join(screenshots, "drop-phone-https-390x844.png"))
        # The session ends (--ttl): the page says so instead of a bare sign-in form.
        receiver.wait_for_log("session ended")
        page.evaluate("() => { location.hash = '#/again'; }")
        page.wait_for_selector("#signin")
        assert "The receiving session has ended" in page.text_content("#signin-error")
        assert page.locator("#files").count() == 0
        assert page.errors == []
    finally:
        context.close()
