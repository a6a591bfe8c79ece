#!/usr/bin/env python3
"""Media benchmark (issue 27): thumbnails of a 1,000-item album as phones fill it, mixed 12 Mpx JPEGs, 12 Mpx
HEICs (with the 320-pixel thumbnail item an iPhone embeds) and 1080p videos (H.264 and HEVC), every decoder in
the media sandbox's worker processes. Starts its own couchlite (COUCHLITE_BIN) on a free port.

    COUCHLITE_BIN=$(swift build --show-bin-path)/couchlite python3 bench/media_thumbnails.py [--items 1000]

Measures: all 320-pixel thumbnails made on a cold cache by four concurrent clients (target: within 60 s), the
server's RSS peak meanwhile (VmHWM after clear_refs; target: under 200 MiB) and the workers' largest RSS, then
the grid's first paint on a warm cache as a browser loads it: the first 60-item page of the listing and its 60
thumbnails over six connections (target: within 1 s). `--smoke` runs it on a few items. Figures: BENCHMARKS.md.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import requests

from gallery import AUTH, ffmpeg, free_port, photo_rows, reset_peak, status

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance"))
from media_samples import jpeg_with_exif  # noqa: E402


def unique(path, count):
    """`count` distinct files from one: a trailing `free` box (ISO BMFF) or bytes after a JPEG's EOI change the
    digest, so each is its own document and thumbnail, at no encoding cost."""
    with open(path, "rb") as f:
        base = f.read()
    return [base + b"\0\0\0\x10free" + i.to_bytes(8, "big") for i in range(count)]


def make_sources(work):
    jpeg = os.path.join(work, "photo.jpg")
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=3024x4032", "-frames:v", "1", "-q:v", "3", jpeg)
    with open(jpeg, "rb") as f:
        data = jpeg_with_exif(f.read(), date="2026:05:12 14:03:11", offset="+02:00", make="Apple",
                              model="iPhone 15", orientation=1)
    with open(jpeg, "wb") as f:
        f.write(data)
    heic = os.path.join(work, "photo.heic")
    subprocess.run(["heif-enc", "-q", "60", "-t", "320", jpeg, "-o", heic], check=True, stdout=subprocess.DEVNULL,
                   timeout=600)
    h264 = os.path.join(work, "video.mp4")
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-t", "3", "-c:v", "libx264", "-preset",
           "veryfast", "-pix_fmt", "yuv420p", h264)
    hevc = os.path.join(work, "video.mov")
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-t", "3", "-c:v", "libx265", "-preset",
           "ultrafast", "-tag:v", "hvc1", "-pix_fmt", "yuv420p", hevc)
    return {"jpeg": jpeg, "heic": heic, "h264": h264, "hevc": hevc}


def upload(base, db, items):
    def one(item):
        name, ctype, body = item
        r = requests.post(f"{base}/_photos/api/db/{db}/upload", params={"name": name, "type": ctype}, data=body,
                          auth=AUTH, timeout=120)
        assert r.status_code == 201, r.text
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(one, items))


def thumbs(base, db, rows, workers):
    session = threading.local()

    def one(row):
        if not hasattr(session, "s"):
            session.s = requests.Session()
            session.s.auth = AUTH
        att = row["attachments"][0]["name"]
        r = session.s.get(f"{base}/_photos/api/db/{db}/thumb/{row['id']}/{att}", params={"size": 320}, timeout=120)
        assert r.status_code == 200 and r.headers["Content-Type"] == "image/jpeg", (att, r.status_code)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, rows))
    return time.monotonic() - started


def children_rss(pid):
    """The largest VmRSS among the server's child processes (its media workers), in bytes."""
    largest = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["PPid"]) == pid and "VmRSS" in fields:
                largest = max(largest, int(fields["VmRSS"].split()[0]) * 1024)
        except (OSError, KeyError, ValueError):
            continue
    return largest


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.items = 20
    binary = os.environ.get("COUCHLITE_BIN") or sys.exit("needs COUCHLITE_BIN")
    work = tempfile.mkdtemp(prefix="couchlite-media-bench-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(os.path.join(work, "server.log"), "wb")
    server = subprocess.Popen([binary, "--port", str(port), "--data-dir", os.path.join(work, "data"), "--admin",
                               "admin:pass", "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            if server.poll() is not None:
                sys.exit("couchlite exited")
            try:
                if requests.get(base + "/_up", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.1)
        sources = make_sources(work)
        n_heic, n_video = args.items * 3 // 10, args.items // 10
        n_jpeg = args.items - n_heic - n_video
        items = [(f"IMG_{i:04d}.JPG", "image/jpeg", b) for i, b in enumerate(unique(sources["jpeg"], n_jpeg))]
        items += [(f"IMG_{i:04d}.HEIC", "image/heic", b) for i, b in enumerate(unique(sources["heic"], n_heic))]
        items += [(f"VID_{i:04d}.MP4", "video/mp4", b)
                  for i, b in enumerate(unique(sources["h264"], n_video - n_video // 2))]
        items += [(f"VID_{i:04d}.MOV", "video/quicktime", b)
                  for i, b in enumerate(unique(sources["hevc"], n_video // 2))]
        assert requests.put(f"{base}/album", auth=AUTH, timeout=10).status_code == 201
        started = time.monotonic()
        upload(base, "album", items)
        upload_s = time.monotonic() - started
        rows = photo_rows(base, "album")
        assert len(rows) == args.items, len(rows)
        idle = status(server.pid, "VmRSS")
        reset_peak(server.pid)
        workers_peak = [0]
        done = threading.Event()

        def sample():
            while not done.wait(0.2):
                workers_peak[0] = max(workers_peak[0], children_rss(server.pid))
        sampler = threading.Thread(target=sample)
        sampler.start()
        cold = thumbs(base, "album", rows, workers=4)
        done.set()
        sampler.join()
        peak = status(server.pid, "VmHWM")
        # Warm first paint: the first page of the listing and its thumbnails over six connections.
        started = time.monotonic()
        page = requests.get(f"{base}/_photos/api/db/album/photos", params={"limit": 60}, auth=AUTH,
                            timeout=60).json()["rows"]
        listing_s = time.monotonic() - started
        thumbs(base, "album", page, workers=6)
        first_paint = time.monotonic() - started
        report = {
            "items": args.items, "jpeg_12mpx": n_jpeg, "heic_12mpx": n_heic, "video_1080p": n_video,
            "sizes_bytes": {k: os.path.getsize(v) for k, v in sources.items()},
            "upload_s": round(upload_s, 1),
            "cold_thumbnails_s": round(cold, 1), "cold_per_second": round(args.items / cold, 1),
            "server_rss_idle_mib": round(idle / 2**20, 1), "server_rss_peak_mib": round(peak / 2**20, 1),
            "worker_rss_peak_mib": round(workers_peak[0] / 2**20, 1),
            "warm_listing_s": round(listing_s, 3), "warm_first_paint_s": round(first_paint, 3),
        }
        print(json.dumps(report, indent=2))
    finally:
        server.terminate()
        server.wait(10)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
