"""Photos and videos for the media tests, made here rather than committed where a generator is exact: EXIF blocks
written byte by byte (DateTimeOriginal, OffsetTimeOriginal, Make, Model, Orientation, GPS), and HEIC, AVIF and
video files made with Debian's encoders (heif-enc, ffmpeg) when a test needs one that is not in
Tests/MediaTests/Samples. See Tests/MediaTests/Samples/README.md for where each committed sample came from."""
import os
import shutil
import struct
import subprocess

SAMPLES = os.path.join(os.path.dirname(__file__), "..", "Tests", "MediaTests", "Samples")


def sample(name):
    with open(os.path.join(SAMPLES, name), "rb") as f:
        return f.read()


def _ifd(entries, start, extra_after=b""):
    """A TIFF IFD (big-endian) at offset `start`: entries are (tag, type, count, payload bytes)."""
    data_at = start + 2 + 12 * len(entries) + 4
    body = struct.pack(">H", len(entries))
    data = b""
    for tag, kind, count, payload in sorted(entries):
        if len(payload) <= 4:
            body += struct.pack(">HHI", tag, kind, count) + payload.ljust(4, b"\0")
        else:
            body += struct.pack(">HHII", tag, kind, count, data_at + len(data))
            data += payload + (b"\0" if len(payload) % 2 else b"")
    return body + b"\0\0\0\0" + data


def _ascii(text):
    raw = text.encode() + b"\0"
    return (2, len(raw), raw)


def _rationals(*values):
    return (5, len(values), b"".join(struct.pack(">II", int(round(v * 1000)), 1000) for v in values))


def _dms(value):
    value = abs(value)
    degrees = int(value)
    minutes = int((value - degrees) * 60)
    seconds = (value - degrees - minutes / 60) * 3600
    return _rationals(degrees, minutes, seconds)


def exif_tiff(date=None, offset=None, make=None, model=None, orientation=None, gps=None):
    """A TIFF block as EXIF holds it: IFD0 (Make, Model, Orientation, pointers), the EXIF IFD, the GPS IFD."""
    ifd0 = []
    if make:
        ifd0.append((0x010F,) + _ascii(make))
    if model:
        ifd0.append((0x0110,) + _ascii(model))
    if orientation:
        ifd0.append((0x0112, 3, 1, struct.pack(">H", orientation)))
    exif = []
    if date:
        exif.append((0x9003,) + _ascii(date))
    if offset:
        exif.append((0x9011,) + _ascii(offset))
    gps_entries = []
    if gps:
        lat, lon = gps
        gps_entries = [
            (0x0001,) + _ascii("N" if lat >= 0 else "S"), (0x0002,) + _dms(lat),
            (0x0003,) + _ascii("E" if lon >= 0 else "W"), (0x0004,) + _dms(lon),
        ]
    # Lay out IFD0 with placeholder pointers to learn its size, then the sub-IFDs after it.
    pointers = (1 if exif else 0) + (1 if gps_entries else 0)
    placeholder = ifd0 + [(0x8769, 4, 1, b"\0\0\0\0")] * (1 if exif else 0) + \
        [(0x8825, 4, 1, b"\0\0\0\0")] * (1 if gps_entries else 0)
    size0 = len(_ifd(placeholder, 8))
    exif_at = 8 + size0
    exif_block = _ifd(exif, exif_at) if exif else b""
    gps_at = exif_at + len(exif_block)
    gps_block = _ifd(gps_entries, gps_at) if gps_entries else b""
    final = list(ifd0)
    if exif:
        final.append((0x8769, 4, 1, struct.pack(">I", exif_at)))
    if gps_entries:
        final.append((0x8825, 4, 1, struct.pack(">I", gps_at)))
    assert pointers == len(final) - len(ifd0)
    return b"MM\0\x2a" + struct.pack(">I", 8) + _ifd(final, 8) + exif_block + gps_block


def jpeg_with_exif(jpeg, **fields):
    """`jpeg` with an APP1 Exif segment right after its SOI."""
    payload = b"Exif\0\0" + exif_tiff(**fields)
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]


def have_encoders():
    return shutil.which("ffmpeg") is not None and shutil.which("heif-enc") is not None


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)


def make_jpeg(path, size="320x240", **exif):
    """A test-pattern JPEG (ffmpeg's testsrc), with an EXIF block when fields are given."""
    run("ffmpeg", "-y", "-f", "lavfi", "-i", f"testsrc=size={size}", "-frames:v", "1", path)
    if exif:
        with open(path, "rb") as f:
            data = jpeg_with_exif(f.read(), **exif)
        with open(path, "wb") as f:
            f.write(data)
    return path


def make_heic(path, size="320x240", avif=False, **exif):
    """A HEIC (or AVIF) by heif-enc from a JPEG that carries `exif`: heif-enc keeps the EXIF block."""
    source = path + ".jpg"
    make_jpeg(source, size=size, **exif)
    run("heif-enc", *(["-A"] if avif else []), "-q", "50", source, "-o", path)
    os.unlink(source)
    return path


def make_video(path, size="320x240", seconds=3, creation_time=None, rotate=None, codec="libx264"):
    """A test-pattern video; `rotate` sets the display matrix (set on a stream copy, as ffmpeg 5.1 does it)."""
    first = path + ".raw" + os.path.splitext(path)[1]
    args = ["ffmpeg", "-y", "-f", "lavfi", "-i", f"testsrc=size={size}:rate=25", "-t", str(seconds), "-c:v", codec]
    if codec == "libx264":
        args += ["-pix_fmt", "yuv420p"]
    run(*args, first)
    args = ["ffmpeg", "-y", "-i", first, "-c", "copy"]
    if creation_time:
        args += ["-metadata", f"creation_time={creation_time}"]
    if rotate is not None:
        args += ["-metadata:s:v:0", f"rotate={rotate}"]
    run(*args, path)
    os.unlink(first)
    return path
