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


# --- A grid-tiled, rotated HEIC as an iPhone writes it --------------------------------------------------------------
# heif-enc 1.15 writes one coded image per file, neither grids nor `irot`; an iPhone photo is a `grid` item of
# 512 x 512 HEVC tiles, turned by `irot`, with an `Exif` item describing it. `grid_heic` assembles exactly that
# structure (ISO/IEC 23008-12: `iinf`, `iref` dimg/cdsc, `iprp` with `ispe` and `irot`, `iloc` into one `mdat`)
# from tiles heif-enc coded, so the sample is made with Debian's encoder and a few boxes written by hand.

def _box(kind, payload):
    return struct.pack(">I4s", 8 + len(payload), kind.encode()) + payload


def _full_box(kind, version, flags, payload):
    return _box(kind, bytes([version]) + flags.to_bytes(3, "big") + payload)


def _children(data, start, end):
    """(type, start, end, payload start) of the boxes in data[start:end] (32-bit sizes: what heif-enc writes)."""
    found = []
    while start < end:
        size, kind = struct.unpack(">I4s", data[start:start + 8])
        found.append((kind.decode("latin-1"), start, start + size, start + 8))
        start += size
    return found


def _find(boxes, kind):
    return next(b for b in boxes if b[0] == kind)


def _meta(data):
    meta = _find(_children(data, 0, len(data)), "meta")
    return _children(data, meta[3] + 4, meta[2])


def _items(data, meta):
    """{item id: bytes} from `iloc` (versions 0-2, construction method 0: offsets into the file)."""
    _, _, _, body = _find(meta, "iloc")
    version, pos = data[body], body + 4
    sizes = data[pos] << 8 | data[pos + 1]
    widths = (sizes >> 12, (sizes >> 8) & 15, (sizes >> 4) & 15, sizes & 15 if version else 0)
    pos += 2

    def read(n):
        nonlocal pos
        value = int.from_bytes(data[pos:pos + n], "big")
        pos += n
        return value
    items = {}
    for _ in range(read(2) if version < 2 else read(4)):
        item = read(2) if version < 2 else read(4)
        if version:
            read(2)
        read(2)
        base = read(widths[2])
        parts = []
        for _ in range(read(2)):
            read(widths[3])
            offset, length = read(widths[0]), read(widths[1])
            parts.append(data[base + offset:base + offset + length])
        items[item] = b"".join(parts)
    return items


def _item_types(data, meta):
    _, _, end, body = _find(meta, "iinf")
    wide = data[body] != 0
    types = {}
    for _, _, _, entry in _children(data, body + 4 + (4 if wide else 2), end):
        types[struct.unpack(">H", data[entry + 4:entry + 6])[0]] = data[entry + 8:entry + 12].decode("latin-1")
    return types


def _coded_tile(path):
    """The `hvcC` box and the coded bytes of a one-image HEIC by heif-enc."""
    data = open(path, "rb").read()
    meta = _meta(data)
    iprp = _find(meta, "iprp")
    ipco = _find(_children(data, iprp[3], iprp[2]), "ipco")
    hvcc = _find(_children(data, ipco[3], ipco[2]), "hvcC")
    return data[hvcc[1]:hvcc[2]], _items(data, meta)[1]


def exif_item(path):
    """The `Exif` item of a HEIF file (the 4-byte TIFF offset, then the block)."""
    data = open(path, "rb").read()
    meta = _meta(data)
    items = _items(data, meta)
    return next(items[i] for i, kind in _item_types(data, meta).items() if kind == "Exif")


def grid_heic(tiles, columns, rows, tile_size, rotation, exif=None, mirror=False):
    """A HEIC whose primary image is a `grid` of `tiles` ((hvcC box, coded bytes), row by row, each
    `tile_size` square), turned by `irot` `rotation` (quarter turns anticlockwise) or, with `mirror`, mirrored left
    to right by `imir` instead, with an optional `Exif` item."""
    count = len(tiles)
    grid, exif_id = count + 1, count + 2
    width, height = columns * tile_size, rows * tile_size
    payloads = [coded for _, coded in tiles] + [bytes([0, 0, rows - 1, columns - 1]) + struct.pack(">HH", width, height)]
    ids = list(range(1, grid + 1))
    if exif:
        payloads.append(exif)
        ids.append(exif_id)
    ipco = _box("ipco", b"".join(h for h, _ in tiles) + _full_box("ispe", 0, 0, struct.pack(">II", tile_size, tile_size))
                + _full_box("ispe", 0, 0, struct.pack(">II", width, height))
                + (_box("imir", bytes([0])) if mirror else _box("irot", bytes([rotation & 3]))))
    # Property indexes are 1-based: the tiles' hvcC, then the tile ispe, the grid ispe, irot or imir (essential).
    associations = b"".join(struct.pack(">HBBB", i, 2, 0x80 | i, count + 1) for i in range(1, count + 1))
    associations += struct.pack(">HBBB", grid, 2, count + 2, 0x80 | (count + 3))
    iprp = _box("iprp", ipco + _full_box("ipma", 0, 0, struct.pack(">I", count + 1) + associations))

    def infe(item, kind, hidden):
        return _full_box("infe", 2, 1 if hidden else 0, struct.pack(">HH", item, 0) + kind.encode() + b"\0")
    entries = [infe(i, "hvc1", True) for i in range(1, count + 1)] + [infe(grid, "grid", False)]
    references = _box("dimg", struct.pack(">HH", grid, count) + b"".join(struct.pack(">H", i) for i in range(1, grid)))
    if exif:
        entries.append(infe(exif_id, "Exif", False))
        references += _box("cdsc", struct.pack(">HHH", exif_id, 1, grid))
    head = (_full_box("hdlr", 0, 0, bytes(4) + b"pict" + bytes(13)) + _full_box("pitm", 0, 0, struct.pack(">H", grid)))
    tail = (_full_box("iinf", 0, 0, struct.pack(">H", len(entries)) + b"".join(entries))
            + _full_box("iref", 0, 0, references) + iprp)

    def iloc(offsets):  # version 0: 4-byte offsets and lengths, one extent per item
        rows_ = b"".join(struct.pack(">HHHII", i, 0, 1, o, len(p)) for i, o, p in zip(ids, offsets, payloads))
        return _full_box("iloc", 0, 0, bytes([0x44, 0]) + struct.pack(">H", len(ids)) + rows_)
    ftyp = _box("ftyp", b"heic" + bytes(4) + b"mif1heic")
    at = len(ftyp) + len(_full_box("meta", 0, 0, head + iloc([0] * len(ids)) + tail)) + 8
    offsets = []
    for payload in payloads:
        offsets.append(at)
        at += len(payload)
    return ftyp + _full_box("meta", 0, 0, head + iloc(offsets) + tail) + _box("mdat", b"".join(payloads))


def make_grid_heic(path, exif_from=None, mirror=False):
    """A grid of 64 x 64 tiles with the `Exif` item of `exif_from` (a HEIC) if given. Without `mirror`: 128 x 64,
    red then green, turned a quarter anticlockwise by `irot` (shown 64 x 128, green on top). With `mirror`:
    128 x 128, red and green over blue and yellow, mirrored by `imir` (axis 0)."""
    colours = ("red", "green", "blue", "yellow") if mirror else ("red", "green")
    tiles = []
    for index, colour in enumerate(colours):
        png, heic = f"{path}.{index}.png", f"{path}.{index}.heic"
        run("ffmpeg", "-y", "-f", "lavfi", "-i", f"color=c={colour}:size=64x64", "-frames:v", "1", png)
        run("heif-enc", "-q", "50", png, "-o", heic)
        tiles.append(_coded_tile(heic))
        os.unlink(png)
        os.unlink(heic)
    rows = 2 if mirror else 1
    with open(path, "wb") as f:
        f.write(grid_heic(tiles, 2, rows, 64, 1, exif_item(exif_from) if exif_from else None, mirror))
    return path


def make_two_frame_animation(path, encoder_args, size="64x48"):
    """Two frames, red then green, each half a second: an animated GIF or WebP (`encoder_args` picks which)."""
    run("ffmpeg", "-y", "-f", "lavfi", "-i", f"color=c=red:s={size}:d=0.5:r=2", "-f", "lavfi", "-i",
        f"color=c=lime:s={size}:d=0.5:r=2", "-filter_complex", "[0][1]concat=n=2:v=1", *encoder_args, path)
    return path


def make_half_transparent_webp(path, size="64x48"):
    """A still, lossless WebP: the left half opaque red, the right half fully transparent."""
    width = int(size.split("x")[0])
    run("ffmpeg", "-y", "-f", "lavfi", "-i", f"color=c=red:s={size},format=rgba",
        "-vf", f"geq=r='255':g='0':b='0':a='if(lt(X,{width // 2}),255,0)'", "-frames:v", "1",
        "-c:v", "libwebp", "-lossless", "1", path)
    return path


def _riff_chunk(kind, payload):
    return kind + struct.pack("<I", len(payload)) + payload + (b"\0" if len(payload) % 2 else b"")


def webp_with_exif(webp, width, height, **exif):
    """A simple (VP8/VP8L) WebP made extended (VP8X) with an EXIF chunk of `exif` fields after its image."""
    assert webp[:4] == b"RIFF" and webp[8:12] == b"WEBP" and webp[12:16] in (b"VP8 ", b"VP8L"), webp[:16]
    image = webp[12:]
    flags = 0x08  # EXIF
    vp8x = struct.pack("<B3x", flags) + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    body = b"WEBP" + _riff_chunk(b"VP8X", vp8x) + image + _riff_chunk(b"EXIF", exif_tiff(**exif))
    return b"RIFF" + struct.pack("<I", len(body)) + body


def make_still_images(directory):
    """The GIF, WebP, TIFF and BMP samples (Samples/README.md)."""
    out = lambda name: os.path.join(directory, name)  # noqa: E731
    make_two_frame_animation(out("animated.gif"), ["-f", "gif"])
    make_two_frame_animation(out("animated.webp"), ["-c:v", "libwebp_anim", "-loop", "0", "-lossless", "1"])
    make_half_transparent_webp(out("half-transparent.webp"))
    run("ffmpeg", "-y", "-f", "lavfi", "-i", "testsrc=size=80x60", "-frames:v", "1", "-c:v", "libwebp",
        out("plain.webp"))
    with open(out("plain.webp"), "rb") as f:
        plain = f.read()
    os.unlink(out("plain.webp"))
    with open(out("exif.webp"), "wb") as f:
        f.write(webp_with_exif(plain, 80, 60, date="2026:04:03 10:20:30", offset="+01:00", make="Google",
                               model="Pixel 8"))
    run("ffmpeg", "-y", "-f", "lavfi", "-i", "testsrc=size=96x64", "-frames:v", "1", "-c:v", "tiff",
        out("photo.tiff"))
    run("ffmpeg", "-y", "-f", "lavfi", "-i", "testsrc=size=96x64", "-frames:v", "1", "-c:v", "bmp",
        out("photo.bmp"))


if __name__ == "__main__":
    import sys

    make_still_images(sys.argv[1] if len(sys.argv) > 1 else SAMPLES)
