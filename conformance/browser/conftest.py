"""Browser tests of the photo gallery (/_photos/) and the database console (/_utils/): a real headless
Chromium (Debian's `chromium`) driven by Playwright, against a couchlite this conftest starts (COUCHLITE_BIN)
on a free port.

    COUCHLITE_BIN=$(swift build --show-bin-path)/couchlite python3 -m pytest conformance/browser -q

GALLERY_SCREENSHOTS=DIR writes the gallery's and the console's screenshots there (docs/screenshots in the
repository were made so); otherwise they go to a temporary directory.
"""
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
import requests

ADMIN = ("admin", "pass")
ALICE = ("alice", "wonderland")


def pytest_collection_modifyitems(config, items):
    binary = os.environ.get("COUCHLITE_BIN", "")
    if not binary or not os.access(binary, os.X_OK):
        raise pytest.UsageError("conformance/browser needs COUCHLITE_BIN, the path of a built couchlite")
    if not chromium_path():
        raise pytest.UsageError("conformance/browser needs Debian's chromium (scripts/setup.sh installs it)")


def chromium_path():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, root: str):
        self.root = root
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(root, "server.log")
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [os.environ["COUCHLITE_BIN"], "--port", str(self.port), "--data-dir", os.path.join(root, "data"),
             "--admin", "admin:pass", "--log-level", "info"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if requests.get(self.base + "/_up", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError("couchlite did not start: " + open(self.log_path, errors="replace").read()[-2000:])

    def admin(self, method, path, **kw):
        kw.setdefault("timeout", 60)
        return requests.request(method, self.base + path, auth=ADMIN, **kw)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()


@pytest.fixture(scope="session")
def workdir():
    path = tempfile.mkdtemp(prefix="couchlite-browser-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def server(workdir):
    server = Server(workdir)
    # alice reads and writes `photos`; `secret` keeps its default security (admins only).
    assert server.admin("PUT", "/photos").status_code == 201
    assert server.admin("PUT", "/secret").status_code == 201
    assert server.admin("PUT", "/_users/org.couchdb.user:alice", json={
        "name": "alice", "password": "wonderland", "type": "user", "roles": []}).status_code == 201
    assert server.admin("PUT", "/photos/_security", json={
        "admins": {"names": [], "roles": []}, "members": {"names": ["alice"], "roles": []}}).status_code == 200
    yield server
    server.stop()


@pytest.fixture(scope="session")
def files(workdir):
    """Test media made with ffmpeg: two photos, a hostile name, and a 50 MB H.264 video."""
    media = os.path.join(workdir, "media")
    os.makedirs(media)

    def ffmpeg(*args):
        subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True, timeout=300)

    made = {
        "jpeg": os.path.join(media, "sunset over the bay.jpg"),
        "png": os.path.join(media, "café ☕ 写真.png"),
        "hostile": os.path.join(media, "<img src=x onerror=alert(1)>.jpg"),
        "video": os.path.join(media, "clip 🎬 long take.mp4"),
    }
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=1600x1200", "-frames:v", "1", made["jpeg"])
    ffmpeg("-f", "lavfi", "-i", "mandelbrot=size=640x480", "-frames:v", "1", made["png"])
    ffmpeg("-f", "lavfi", "-i", "smptebars=size=800x600", "-frames:v", "1", made["hostile"])
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25", "-t", "20", "-c:v", "libx264", "-preset",
           "ultrafast", "-pix_fmt", "yuv420p", "-g", "25", "-movflags", "+faststart", made["video"])
    # To 50 MiB with a top-level `free` box at the end (ISO 14496-12: skipped by every reader), so
    # the file is as big as a phone's clip and still a valid, seekable MP4.
    target = 50 * 1024 * 1024
    size = os.path.getsize(made["video"])
    with open(made["video"], "ab") as f:
        pad = target - size
        f.write(pad.to_bytes(4, "big") + b"free")
        remaining = pad - 8
        block = bytes(1 << 20)
        while remaining > 0:
            f.write(block[:min(len(block), remaining)])
            remaining -= min(len(block), remaining)
    assert os.path.getsize(made["video"]) == target
    return made


@pytest.fixture(scope="session")
def screenshots(workdir):
    path = os.environ.get("GALLERY_SCREENSHOTS") or os.path.join(workdir, "screenshots")
    os.makedirs(path, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium_path(), headless=True,
            args=["--no-sandbox", "--autoplay-policy=no-user-gesture-required"])
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def context(browser, workdir):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    yield context
    context.close()


@pytest.fixture(scope="session")
def page(context):
    """One tab for the whole session: the tests are steps of one visit, in file order."""
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    yield page
    page.close()


@contextlib.contextmanager
def signed_in_tab(browser, server, **options):
    """A tab in a browser context of its own (`options` as Playwright's `new_context`), signed in as the server
    admin, collecting the page's script errors in `tab.errors`."""
    context = browser.new_context(viewport={"width": 1280, "height": 860}, **options)
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    tab.errors = []
    tab.on("pageerror", lambda error: tab.errors.append(str(error)))
    r = tab.request.post(server.base + "/_session", data={"name": ADMIN[0], "password": ADMIN[1]})
    assert r.status == 200
    try:
        yield tab
    finally:
        context.close()
