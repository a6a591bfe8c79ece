#ifndef COUCHLITE_THUMBNAIL_H
#define COUCHLITE_THUMBNAIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/// What `thumb_make` learnt about its input.
typedef struct {
    /// Size of the source image as stored (before orientation), in pixels.
    int source_width;
    int source_height;
    /// EXIF orientation 1...8 (1 when there is none or it is unreadable).
    int orientation;
    /// Size of the thumbnail made, in pixels (after orientation).
    int width;
    int height;
    /// Why it failed, when it did (NUL-terminated, for logs).
    char error[160];
} thumb_info;

/// Makes a JPEG thumbnail of the JPEG or PNG file at `path`, at most `max_side` pixels on its
/// longer side (never enlarged), with the EXIF orientation applied.
///
/// Memory is bounded whatever the input: JPEGs are decoded at a DCT scale near the target size,
/// rows are averaged into the thumbnail as they are decoded (no full-size image is kept),
/// libjpeg's own allocations are capped at `memory_limit` bytes, and images of more than
/// `max_pixels` pixels are refused.
///
/// @return 0 and a `malloc`ed JPEG in `*out` / `*out_len` (free it with `thumb_free`), or -1 with
///         `info->error` set (not an image we read, corrupt, too large). Never aborts the process.
int thumb_make(const char *path, int max_side, size_t memory_limit, uint64_t max_pixels, int quality,
               unsigned char **out, size_t *out_len, thumb_info *info);

/// A stdio stream of its own over `fd`, from its start (`fclose` leaves `fd` open; the two share one offset), or
/// NULL with errno set.
FILE *thumb_stream_at_start(int fd);

/// `thumb_make` of the file open on `fd` (read from its start; left open): what the media worker, which has no
/// file system, calls.
int thumb_make_fd(int fd, int max_side, size_t memory_limit, uint64_t max_pixels, int quality, unsigned char **out,
                  size_t *out_len, thumb_info *info);

/// The EXIF orientation (1...8) in an APP1 `Exif` segment's payload, or 1 when absent or malformed.
int thumb_exif_orientation(const unsigned char *data, size_t length);

/// Encodes packed RGB pixels as a JPEG (tests and placeholders). @return 0 or -1.
int thumb_encode_jpeg(const unsigned char *rgb, int width, int height, int quality, unsigned char **out,
                      size_t *out_len);

/// Writes a test JPEG of `width` x `height` row by row (never the whole image in memory): a
/// gradient, progressive when asked. @return 0 or -1.
int thumb_write_test_jpeg(const char *path, int width, int height, int progressive);

/// Encodes packed RGBA pixels as a PNG file (tests). `interlaced` selects Adam7. @return 0 or -1.
int thumb_write_png(const char *path, const unsigned char *rgba, int width, int height, int interlaced);

/// Decodes a JPEG held in memory to packed RGB (tests). @return 0 or -1.
int thumb_decode_jpeg_memory(const unsigned char *data, size_t length, unsigned char **rgb, int *width,
                             int *height);

/// Packed RGB (or RGBA, composited over white, when `channels` is 4) downscaled by box averaging to at most
/// `max_side` on its longer side (never enlarged) and turned as EXIF `orientation` (1...8) says: the last step of
/// a decoder that yields whole frames (HEIF, video). @return a `malloc`ed RGB buffer and its size, or NULL.
unsigned char *thumb_fit_rgb(const unsigned char *pixels, int width, int height, int stride, int channels,
                             int max_side, int orientation, int *out_width, int *out_height);

void thumb_free(void *pointer);

#endif
