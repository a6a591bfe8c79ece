"""`couchlite receive` given what phones send: a HEIC and a video get gallery thumbnails (the video a poster
frame), the camera's date as `taken` in the listing and as the exported file's mtime, whatever date the sender's
document carries; hostile media (a 10-gigapixel HEIC, a video claiming ten hours of 8K) are saved byte for byte
like any file but never decoded, and cost the receiver nothing. Samples: Tests/MediaTests/Samples."""

from __future__ import annotations

import calendar
import os
import struct
import time

import pytest

from media_samples import sample
from receive_support import Receiver, check_folder, inline_doc
from test_receive_e2e import bulk, receivers  # noqa: F401 (the fixture)

HEIC_TAKEN = calendar.timegm((2026, 5, 12, 12, 3, 11))   # 14:03:11 at +02:00
VIDEO_TAKEN = calendar.timegm((2026, 5, 10, 8, 0, 0))    # creation_time, UTC
SENDER_DATE = "2020-01-01T00:00:00Z"                      # what the sender's document says


def patch(data: bytes, box: bytes, offsets: list[int], values: list[int], occurrence: int = 0) -> bytes:
    """`data` with 32-bit fields at `offsets` after the `occurrence`-th `box` type replaced by `values`."""
    at = -1
    for _ in range(occurrence + 1):
        at = data.index(box, at + 1)
    out = bytearray(data)
    for offset, value in zip(offsets, values):
        out[at + 4 + offset:at + 8 + offset] = struct.pack(">I", value)
    return bytes(out)


def heic_bomb() -> bytes:
    return patch(sample("exif-photo.heic"), b"ispe", [4, 8], [100_000, 100_000])


def video_bomb() -> bytes:
    data = patch(sample("rotated.mp4"), b"avc1", [24], [7680 << 16 | 4320], occurrence=1)
    return patch(data, b"mvhd", [16], [36_000_000])


def gallery(receiver: Receiver, path: str):
    return receiver.admin().get(f"{receiver.base}/_photos/api/db/{receiver.db}/{path}", timeout=60)


def test_receive_heic_and_video_get_thumbnails_posters_taken_and_mtime(receivers):
    receiver = receivers()
    started = time.time()
    receiver.start()
    heic, video = sample("exif-photo.heic"), sample("rotated.mp4")
    bulk(receiver, [
        inline_doc("photo-heic", {"IMG_0001.HEIC": ("image/heic", heic)}, type="photo", taken=SENDER_DATE),
        inline_doc("photo-video", {"IMG_0002.MP4": ("video/mp4", video)}, type="photo", taken=SENDER_DATE),
    ])
    check_folder(receiver.out, {"IMG_0001.HEIC": (heic, float(HEIC_TAKEN)),
                                "IMG_0002.MP4": (video, float(VIDEO_TAKEN))}, started, time.time())
    rows = gallery(receiver, "photos").json()["rows"]
    assert [(r["id"], r["kind"], r["taken"]) for r in rows] == [
        ("photo-heic", "photo", "2026-05-12T14:03:11+02:00"), ("photo-video", "video", "2026-05-10T08:00:00Z")]
    assert rows[1]["duration"] == pytest.approx(2.0, abs=0.1) and (rows[1]["width"], rows[1]["height"]) == (240, 320)
    for doc_id, name in (("photo-heic", "IMG_0001.HEIC"), ("photo-video", "IMG_0002.MP4")):
        thumb = gallery(receiver, f"thumb/{doc_id}/{name}")
        assert thumb.status_code == 200 and thumb.headers["Content-Type"] == "image/jpeg", name
        assert thumb.content[:3] == b"\xff\xd8\xff"


def test_receive_survives_a_hostile_heic_and_video(receivers):
    receiver = receivers()
    started = time.time()
    receiver.start()
    bombs = {"bomb.heic": ("image/heic", heic_bomb()), "bomb.mp4": ("video/mp4", video_bomb())}
    good = sample("photo.avif")
    bulk(receiver, [
        inline_doc("photo-bomb-heic", {"bomb.heic": bombs["bomb.heic"]}, taken=SENDER_DATE),
        inline_doc("photo-bomb-video", {"bomb.mp4": bombs["bomb.mp4"]}, taken=SENDER_DATE),
        inline_doc("photo-good", {"good.avif": ("image/avif", good)}, taken=SENDER_DATE),
    ])
    sender = float(calendar.timegm((2020, 1, 1, 0, 0, 0)))
    check_folder(receiver.out, {"bomb.heic": (bombs["bomb.heic"][1], sender),
                                "bomb.mp4": (bombs["bomb.mp4"][1], sender),
                                "good.avif": (good, float(calendar.timegm((2026, 5, 11, 13, 30, 0))))},
                 started, time.time())
    for doc_id, name in (("photo-bomb-heic", "bomb.heic"), ("photo-bomb-video", "bomb.mp4")):
        thumb = gallery(receiver, f"thumb/{doc_id}/{name}")
        assert thumb.status_code == 200 and thumb.headers["Content-Type"] == "image/svg+xml", name
    assert gallery(receiver, "thumb/photo-good/good.avif").headers["Content-Type"] == "image/jpeg"
    rows = {r["id"]: r for r in gallery(receiver, "photos").json()["rows"]}
    assert rows["photo-bomb-heic"]["width"] is None and rows["photo-bomb-heic"]["taken"] == SENDER_DATE
    assert rows["photo-good"]["taken"] == "2026-05-11T09:30:00-04:00"
    # The receiver is alive and well.
    assert receiver.admin().get(f"{receiver.base}/_up", timeout=10).status_code == 200
