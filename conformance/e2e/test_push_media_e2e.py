"""`couchlite push` writes `taken` from the file itself: the camera's date with its offset (EXIF in a JPEG or a
HEIC, QuickTime's in a video), the file's modification time only when there is none."""

from __future__ import annotations

import os
import shutil

import requests

from media_samples import SAMPLES, jpeg_with_exif
from test_gallery import TINY_JPEG
from test_push_command import peer_docs, push


def test_push_takes_the_camera_date_and_the_file_time_only_without_one(servers, tmp_path):
    peer = servers("peer")
    folder = tmp_path / "photos"
    folder.mkdir()
    shutil.copy(os.path.join(SAMPLES, "exif-photo.heic"), folder / "IMG_0001.HEIC")
    shutil.copy(os.path.join(SAMPLES, "live.mov"), folder / "IMG_0002.MOV")
    (folder / "exif.jpg").write_bytes(jpeg_with_exif(TINY_JPEG, date="2026:05:11 23:30:00", offset="-05:00"))
    (folder / "plain.jpg").write_bytes(TINY_JPEG)
    os.utime(folder / "plain.jpg", (1600000000, 1600000000))
    out = push([str(folder), f"{peer.url}/drop"], str(tmp_path / "sender"))
    assert out.returncode == 0, out.stderr.decode()
    taken = {name: doc["taken"] for name, doc in peer_docs(peer, "drop").items()}
    assert taken == {"IMG_0001.HEIC": "2026-05-12T14:03:11+02:00", "IMG_0002.MOV": "2026-05-08T12:00:00+01:00",
                     "exif.jpg": "2026-05-11T23:30:00-05:00", "plain.jpg": "2020-09-13T12:26:40Z"}


def test_push_writes_the_camera_and_size_so_a_mango_query_finds_photos_by_camera(servers, tmp_path):
    peer = servers("peer")
    folder = tmp_path / "photos"
    folder.mkdir()
    shutil.copy(os.path.join(SAMPLES, "exif-photo.heic"), folder / "IMG_0001.HEIC")
    shutil.copy(os.path.join(SAMPLES, "rotated.mp4"), folder / "clip.mp4")
    (folder / "pixel.jpg").write_bytes(jpeg_with_exif(TINY_JPEG, make="Google", model="Pixel 8"))
    (folder / "plain.jpg").write_bytes(TINY_JPEG)
    out = push([str(folder), f"{peer.url}/drop"], str(tmp_path / "sender"))
    assert out.returncode == 0, out.stderr.decode()
    docs = peer_docs(peer, "drop")
    assert docs["IMG_0001.HEIC"]["camera"] == {"make": "Apple", "model": "iPhone 15 Pro"}
    assert (docs["IMG_0001.HEIC"]["width"], docs["IMG_0001.HEIC"]["height"]) == (320, 240)
    assert (docs["clip.mp4"]["width"], docs["clip.mp4"]["height"]) == (240, 320)  # as displayed: rotated
    assert docs["pixel.jpg"]["camera"] == {"make": "Google", "model": "Pixel 8"}
    assert "camera" not in docs["plain.jpg"]
    # The README's Mango example, on what push wrote.
    r = requests.post(f"{peer.url}/drop/_find", json={"selector": {"camera.model": "Pixel 8"}, "fields": ["name"]},
                      timeout=30)
    assert r.status_code == 200 and r.json()["docs"] == [{"name": "pixel.jpg"}], r.text
