#!/usr/bin/env python3
"""Gallery benchmark: the server's thumbnail throughput and memory, and the first paint of a grid
of 1,000 photos in headless Chromium. Starts its own couchlite (COUCHLITE_BIN) on a free port.

    COUCHLITE_BIN=$(swift build --show-bin-path)/couchlite python3 bench/gallery.py [--photos 1000] [--big 40]

`--smoke` runs every step on a few photos (conformance/browser/test_bench_smoke.py does, so the
instrument cannot rot). Figures: BENCHMARKS.md.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import requests

AUTH = ("admin", "pass")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True, timeout=300)


def variants(path, count, salt=b"bench"):
    """`count` distinct JPEGs from one: bytes after the EOI marker are ignored by decoders, so each
    has its own digest (its own document and thumbnail) at no encoding cost."""
    with open(path, "rb") as f:
        base = f.read()
    return [base + b"\0" + salt + i.to_bytes(4, "big") for i in range(count)]


def upload_all(base, db, bodies, prefix):
    session = requests.Session()
    session.auth = AUTH
    for i, body in enumerate(bodies):
        r = session.post(f"{base}/_photos/api/db/{db}/upload", params={"name": f"{prefix}{i:04d}.jpg",
                         "type": "image/jpeg"}, data=body, timeout=60)
        assert r.status_code == 201, r.text


def photo_rows(base, db):
    rows, before = [], None
    while True:
        params = {"limit": 500} | ({"before": before} if before is not None else {})
        page = requests.get(f"{base}/_photos/api/db/{db}/photos", params=params, auth=AUTH, timeout=60).json()
        rows += page["rows"]
        before = page["next"]
        if before is None:
            return rows


def thumbnails(base, db, rows, workers):
    def one(row):
        att = row["attachments"][0]["name"]
        r = requests.get(f"{base}/_photos/api/db/{db}/thumb/{row['id']}/{att}", params={"size": 320}, auth=AUTH,
                         timeout=120)
        assert r.status_code == 200 and r.headers["Content-Type"] == "image/jpeg", r.status_code
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, rows))
    return time.monotonic() - started


def first_paint(base, db, chromium):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto(base + "/_photos/")
        page.fill("#name", AUTH[0])
        page.fill("#password", AUTH[1])
        page.click("#signin button[type=submit]")
        page.wait_for_selector("#dbs")
        results = {}
        for label in ("cold", "warm"):
            page.goto("about:blank")
            started = time.monotonic()
            page.goto(f"{base}/_photos/#/db/{db}")
            page.wait_for_selector(".tile")
            first_tile = time.monotonic() - started
            # Every tile in the first screen has its thumbnail decoded.
            while not page.evaluate("""() => {
                const imgs = Array.from(document.querySelectorAll('.tile img')).filter((i) => {
                    const r = i.getBoundingClientRect();
                    return r.top < innerHeight && r.bottom > 0;
                });
                return imgs.length > 0 && imgs.every((i) => i.complete && i.naturalWidth > 0);
            }"""):
                time.sleep(0.02)
            screen = time.monotonic() - started
            fcp = page.evaluate("""() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime""")
            tiles = page.evaluate("document.querySelectorAll('.tile').length")
            results[label] = {"first_tile_s": round(first_tile, 3), "first_screen_thumbnails_s": round(screen, 3),
                              "first_contentful_paint_ms": round(fcp or 0), "tiles_in_dom": tiles}
        browser.close()
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--photos", type=int, default=1000, help="photos in the grid database")
    parser.add_argument("--big", type=int, default=40, help="12-megapixel photos for the throughput run")
    parser.add_argument("--smoke", action="store_true", help="a few photos, every step")
    args = parser.parse_args()
    if args.smoke:
        args.photos, args.big = 12, 3
    binary = os.environ.get("COUCHLITE_BIN")
    chromium = shutil.which("chromium")
    if not binary or not chromium:
        sys.exit("needs COUCHLITE_BIN and chromium")
    work = tempfile.mkdtemp(prefix="couchlite-gallery-bench-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(os.path.join(work, "server.log"), "wb")
    server = subprocess.Popen([binary, "--port", str(port), "--data-dir", os.path.join(work, "data"), "--admin",
                               "admin:pass", "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            if server.poll() is not None:
                sys.exit("couchlite exited: " + open(os.path.join(work, "server.log"), errors="replace").read())
            try:
                if requests.get(base + "/_up", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.1)
        small = os.path.join(work, "small.jpg")
        big = os.path.join(work, "big.jpg")
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=1600x1200", "-frames:v", "1", "-q:v", "4", small)
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=4000x3000", "-frames:v", "1", "-q:v", "3", big)
        for db in ("grid", "big", "small"):
            assert requests.put(f"{base}/{db}", auth=AUTH, timeout=10).status_code == 201
        upload_all(base, "grid", variants(small, args.photos), "photo ")
        upload_all(base, "big", variants(big, args.big), "large ")
        upload_all(base, "small", variants(small, args.big * 5, salt=b"other"), "small ")
        report = {"photos": args.photos, "grid_photo": "1600x1200 JPEG, %d bytes" % os.path.getsize(small),
                  "big_photo": "4000x3000 JPEG, %d bytes" % os.path.getsize(big)}
        report["grid"] = first_paint(base, "grid", chromium)
        rows = photo_rows(base, "big")
        idle_rss = status(server.pid, "VmRSS")
        reset_peak(server.pid)
        elapsed = thumbnails(base, "big", rows, workers=2)
        report["thumbnails_12mp"] = {"count": len(rows), "seconds": round(elapsed, 2),
                                     "per_second": round(len(rows) / elapsed, 1),
                                     "rss_idle_mib": round(idle_rss / 2**20, 1),
                                     "rss_peak_mib": round(status(server.pid, "VmHWM") / 2**20, 1)}
        cached = thumbnails(base, "big", rows, workers=2)
        report["thumbnails_cached"] = {"count": len(rows), "per_second": round(len(rows) / cached, 1)}
        small_rows = photo_rows(base, "small")
        reset_peak(server.pid)
        elapsed = thumbnails(base, "small", small_rows, workers=2)
        report["thumbnails_2mp"] = {"count": len(small_rows), "seconds": round(elapsed, 2),
                                    "per_second": round(len(small_rows) / elapsed, 1),
                                    "rss_peak_mib": round(status(server.pid, "VmHWM") / 2**20, 1)}
        print(json.dumps(report, indent=2))
    finally:
        server.terminate()
        server.wait(10)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
