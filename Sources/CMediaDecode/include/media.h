#ifndef COUCHLITE_MEDIA_H
#define COUCHLITE_MEDIA_H

#include <stddef.h>
#include <stdint.h>

/// What a photo or video says about itself: read from its headers and metadata only, no pixel decoded.
typedef struct {
    /// 0: not a file we read, 1: a photo, 2: a video.
    int kind;
    /// "jpeg", "png", "gif", "webp", "tiff", "bmp", "heic", "avif", "mp4", "webm", "3gp"…
    char format[16];
    /// Size as displayed (orientation or rotation applied), in pixels; 0 when unknown.
    int width;
    int height;
    /// EXIF orientation 1...8 that rendering applies (1 for HEIF, whose irot/imir libheif applies, and for video).
    int orientation;
    /// Clockwise degrees a video's display matrix turns it by (0, 90, 180, 270).
    int rotation;
    /// Seconds, for videos.
    double duration;
    /// When it was taken as the camera wrote it: "YYYY-MM-DDTHH:MM:SS" local time, "" when unknown.
    char taken[24];
    /// Its UTC offset ("+02:00"), "Z" when `taken` is UTC, "" when the camera did not say.
    char offset[8];
    char make[64];
    char model[64];
    int has_gps;
    double latitude;
    double longitude;
    /// Apple's content identifier of a Live Photo's halves (MakerNote / QuickTime metadata), "" when none.
    char content_id[80];
    /// Why it failed, when it did.
    char error[160];
} media_info;

/// Limits on what a file may declare before anything is decoded (decompression bombs).
typedef struct {
    /// Largest still image, in pixels.
    uint64_t max_pixels;
    /// Largest video frame, in pixels.
    uint64_t max_video_pixels;
    /// Largest declared frame pixels x seconds of a video.
    double max_video_pixel_seconds;
} media_limits;

// Every entry point reads the file through an open descriptor (`fd`, a regular file, read by offset and left
// open): the media worker has no file system to open a path in.

/// What the first bytes of the file say it is: 0 unknown, 1 JPEG or PNG, 2 HEIF or AVIF, 3 a video, 4 a GIF, TIFF,
/// BMP or WebP image.
int media_container(int fd);

/// Reads what the file says about itself into `info`. @return 0, or -1 with `info->error` set. Never aborts.
int media_probe(int fd, const media_limits *limits, media_info *info);

/// A JPEG of the file (HEIF/AVIF primary image, a video's poster frame a second in, the first frame of a GIF, TIFF,
/// BMP or WebP, animated ones included, transparency over white) at most `max_side` pixels on
/// its longer side, orientation applied; declared sizes beyond `limits` are refused before decoding.
/// @return 0 and a `malloc`ed JPEG in `*out`/`*out_len` (free with `media_free`), or -1 with `info->error` set.
int media_render(int fd, int max_side, int quality, const media_limits *limits, unsigned char **out,
                 size_t *out_len, media_info *info);

void media_free(void *pointer);

/// Loads what the decoders load from disk (libheif's codec plugins), before the worker loses its file system.
/// @return 0, or -1 when libheif cannot start.
int media_prepare(void);

#endif
