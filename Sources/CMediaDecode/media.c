// Photos and videos beyond JPEG and PNG: HEIF/AVIF with libheif, video, GIF, TIFF and BMP with FFmpeg's libraries,
// WebP (still and animated) with libwebp, EXIF with libexif.
// In C because FFmpeg's API is macros and struct fields Swift reads poorly, and so the whole parser surface sits
// in one place that only the sandboxed media worker (Sources/MediaSandbox) links into a running process.
// Every entry point returns an error code; nothing here aborts the process on bad input.
#include "media.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavformat/avformat.h>
#include <libavcodec/avcodec.h>
#include <libavutil/display.h>
#include <libswscale/swscale.h>
#include <libexif/exif-data.h>
#include <libexif/exif-loader.h>
#include <libheif/heif.h>
#include <webp/decode.h>
#include <webp/demux.h>

#include "thumbnail.h"

/// The largest EXIF block read from a HEIF file (a real one is a few KiB to 64 KiB).
#define MAX_EXIF_BYTES (1 << 20)
/// Packets read while looking for a poster frame before giving up.
#define MAX_POSTER_PACKETS 4000
/// The demuxers a video may reach (FFmpeg's names, as `format_whitelist` takes them): the containers phones record
/// and the sniffer below sends to FFmpeg. Nothing else of FFmpeg's hundred demuxers (HLS, concat, image sequences,
/// and every format that opens another input) parses a sender's bytes.
#define VIDEO_FORMATS "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm"
/// The largest WebP file decoded (libwebp reads from memory; a real photo is a few MiB).
#define MAX_WEBP_BYTES (64 << 20)

// MARK: - Reading from a descriptor

// The worker is given open descriptors, never paths (it has no file system: see Sources/CProcess/shim.h), so every
// reader here reads the file through `fd`, by `pread` from an offset of its own.

static int64_t file_size(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
}

/// One file read by offset: what libheif's reader and FFmpeg's AVIOContext call back into.
typedef struct {
    int fd;
    int64_t position;
    int64_t size;
} fd_reader;

static int64_t fd_reader_read(fd_reader *r, void *buffer, size_t wanted) {
    size_t done = 0;
    while (done < wanted) {
        ssize_t n = pread(r->fd, (char *)buffer + done, wanted - done, (off_t)r->position);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += (size_t)n;
        r->position += n;
    }
    return (int64_t)done;
}

static void set_error(media_info *info, const char *message) {
    snprintf(info->error, sizeof info->error, "%s", message);
}

static void copy_text(char *to, size_t size, const char *from) {
    size_t n = 0;
    for (; from != NULL && from[n] != 0 && n + 1 < size; n++) {
        unsigned char c = (unsigned char)from[n];
        to[n] = c < 0x20 || c == 0x7F ? ' ' : (char)c;
    }
    to[n] = 0;
    while (n > 0 && to[n - 1] == ' ') to[--n] = 0;
}

// MARK: - Sniffing

enum container { C_UNKNOWN, C_JPEG, C_PNG, C_HEIF, C_AVIF, C_VIDEO, C_GIF, C_TIFF, C_BMP, C_WEBP };

static int is_brand(const unsigned char *p, const char *brand) { return memcmp(p, brand, 4) == 0; }

/// What the first bytes say the file is (never its name: names are the sender's word).
static enum container sniff(const unsigned char *head, size_t n) {
    if (n >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF) return C_JPEG;
    if (n >= 8 && memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0) return C_PNG;
    if (n >= 4 && memcmp(head, "\x1a\x45\xdf\xa3", 4) == 0) return C_VIDEO;
    if (n >= 6 && (memcmp(head, "GIF87a", 6) == 0 || memcmp(head, "GIF89a", 6) == 0)) return C_GIF;
    if (n >= 4 && (memcmp(head, "II*\0", 4) == 0 || memcmp(head, "MM\0*", 4) == 0)) return C_TIFF;
    // "BM" alone is too weak: the four reserved bytes of its header are zero.
    if (n >= 14 && head[0] == 'B' && head[1] == 'M' && memcmp(head + 6, "\0\0\0\0", 4) == 0) return C_BMP;
    if (n < 12) return C_UNKNOWN;
    if (memcmp(head, "RIFF", 4) == 0 && memcmp(head + 8, "WEBP", 4) == 0) return C_WEBP;
    if (is_brand(head + 4, "ftyp")) {
        uint32_t box = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 | head[3];
        size_t end = box < n ? box : n;
        int heif = 0, avif = 0;
        for (size_t at = 8; at + 4 <= end; at += 4) {
            if (at == 12) continue;  // the minor version
            const unsigned char *b = head + at;
            if (is_brand(b, "heic") || is_brand(b, "heix") || is_brand(b, "heim") || is_brand(b, "heis")) heif = 1;
            if (is_brand(b, "avif") || is_brand(b, "avis")) avif = 1;
            if (is_brand(b, "mif1") || is_brand(b, "msf1")) heif = heif ? heif : 2;
        }
        // The major brand decides when both kinds are listed.
        if (is_brand(head + 8, "avif")) return C_AVIF;
        if (heif == 1) return C_HEIF;
        if (avif) return C_AVIF;
        if (heif == 2) return C_HEIF;
        return C_VIDEO;
    }
    if (is_brand(head + 4, "moov") || is_brand(head + 4, "mdat") || is_brand(head + 4, "wide") ||
        is_brand(head + 4, "free"))
        return C_VIDEO;
    return C_UNKNOWN;
}

static enum container sniff_file(int fd, media_info *info) {
    unsigned char head[256];
    fd_reader reader = {.fd = fd, .position = 0, .size = file_size(fd)};
    if (reader.size < 0) {
        set_error(info, "cannot read the file");
        return C_UNKNOWN;
    }
    size_t n = (size_t)fd_reader_read(&reader, head, sizeof head);
    enum container c = sniff(head, n);
    if (c == C_UNKNOWN) set_error(info, "not a photo or video this server reads");
    return c;
}

// MARK: - Dates

static int digits(const char *s, int n) {
    for (int i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/// "YYYY:MM:DD HH:MM:SS" (EXIF) or "YYYY-MM-DDTHH:MM:SS…" (ISO 8601) as "YYYY-MM-DDTHH:MM:SS", and the offset
/// that follows an ISO 8601 time ("Z", "+02:00", "+0200"). @return 1 when it is a date.
static int parse_date(const char *text, char taken[24], char offset[8]) {
    if (text == NULL || strlen(text) < 19) return 0;
    if (!digits(text, 4) || !digits(text + 5, 2) || !digits(text + 8, 2) || !digits(text + 11, 2) ||
        !digits(text + 14, 2) || !digits(text + 17, 2))
        return 0;
    if (memcmp(text, "0000", 4) == 0) return 0;  // "0000:00:00 00:00:00": a camera with no clock set
    snprintf(taken, 24, "%.4s-%.2s-%.2sT%.2s:%.2s:%.2s", text, text + 5, text + 8, text + 11, text + 14,
             text + 17);
    const char *rest = text + 19;
    if (*rest == '.')
        for (rest++; *rest >= '0' && *rest <= '9'; rest++) {
        }
    if (offset == NULL) return 1;
    if (*rest == 'Z') snprintf(offset, 8, "Z");
    else if ((*rest == '+' || *rest == '-') && digits(rest + 1, 2)) {
        const char *minutes = rest[3] == ':' ? rest + 4 : rest + 3;
        if (digits(minutes, 2)) snprintf(offset, 8, "%c%.2s:%.2s", rest[0], rest + 1, minutes);
    }
    return 1;
}

/// An EXIF offset ("+02:00", "-05:30"), as OffsetTimeOriginal holds it.
static void parse_offset(const char *text, char offset[8]) {
    if (text != NULL && strlen(text) >= 6 && (text[0] == '+' || text[0] == '-') && digits(text + 1, 2) &&
        text[3] == ':' && digits(text + 4, 2))
        snprintf(offset, 8, "%.6s", text);
}

// MARK: - EXIF

static const char *entry_text(ExifData *exif, ExifIfd ifd, ExifTag tag, char *buffer, unsigned size) {
    ExifEntry *entry = exif_content_get_entry(exif->ifd[ifd], tag);
    if (entry == NULL || entry->format != EXIF_FORMAT_ASCII || entry->data == NULL || entry->size == 0) return NULL;
    size_t n = entry->size < size ? entry->size : size - 1;
    memcpy(buffer, entry->data, n);
    buffer[n] = 0;
    return buffer;
}

static int gps_coordinate(ExifData *exif, ExifTag value_tag, ExifTag ref_tag, double *out) {
    ExifEntry *value = exif_content_get_entry(exif->ifd[EXIF_IFD_GPS], value_tag);
    ExifEntry *ref = exif_content_get_entry(exif->ifd[EXIF_IFD_GPS], ref_tag);
    if (value == NULL || value->format != EXIF_FORMAT_RATIONAL || value->components < 3 || value->size < 24)
        return 0;
    ExifByteOrder order = exif_data_get_byte_order(exif);
    double parts[3];
    for (int i = 0; i < 3; i++) {
        ExifRational r = exif_get_rational(value->data + 8 * i, order);
        if (r.denominator == 0) return 0;
        parts[i] = (double)r.numerator / (double)r.denominator;
    }
    double degrees = parts[0] + parts[1] / 60 + parts[2] / 3600;
    if (ref != NULL && ref->data != NULL && ref->size >= 1 && (ref->data[0] == 'S' || ref->data[0] == 'W'))
        degrees = -degrees;
    *out = degrees;
    return 1;
}

/// Apple's MakerNote tag 0x11, the content identifier both halves of a Live Photo carry.
static void apple_content_id(ExifData *exif, media_info *info) {
    ExifMnoteData *notes = exif_data_get_mnote_data(exif);
    if (notes == NULL) return;
    unsigned count = exif_mnote_data_count(notes);
    for (unsigned i = 0; i < count && i < 256; i++) {
        if (exif_mnote_data_get_id(notes, i) != 0x11) continue;
        char value[80];
        if (exif_mnote_data_get_value(notes, i, value, sizeof value) != NULL) copy_text(info->content_id, 80, value);
        return;
    }
}

/// Date taken, camera, orientation and GPS from a parsed EXIF block.
static void read_exif(ExifData *exif, media_info *info, int wants_orientation) {
    char text[96];
    const char *date = entry_text(exif, EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_ORIGINAL, text, sizeof text);
    if (date == NULL) date = entry_text(exif, EXIF_IFD_EXIF, EXIF_TAG_DATE_TIME_DIGITIZED, text, sizeof text);
    if (date == NULL) date = entry_text(exif, EXIF_IFD_0, EXIF_TAG_DATE_TIME, text, sizeof text);
    if (date != NULL && parse_date(date, info->taken, NULL)) {
        char offset[16];
        const char *o = entry_text(exif, EXIF_IFD_EXIF, EXIF_TAG_OFFSET_TIME_ORIGINAL, offset, sizeof offset);
        if (o == NULL) o = entry_text(exif, EXIF_IFD_EXIF, EXIF_TAG_OFFSET_TIME, offset, sizeof offset);
        parse_offset(o, info->offset);
    }
    if (entry_text(exif, EXIF_IFD_0, EXIF_TAG_MAKE, text, sizeof text)) copy_text(info->make, 64, text);
    if (entry_text(exif, EXIF_IFD_0, EXIF_TAG_MODEL, text, sizeof text)) copy_text(info->model, 64, text);
    if (wants_orientation) {
        ExifEntry *entry = exif_content_get_entry(exif->ifd[EXIF_IFD_0], EXIF_TAG_ORIENTATION);
        if (entry != NULL && entry->format == EXIF_FORMAT_SHORT && entry->size >= 2) {
            int value = exif_get_short(entry->data, exif_data_get_byte_order(exif));
            if (value >= 1 && value <= 8) info->orientation = value;
        }
    }
    double latitude, longitude;
    if (gps_coordinate(exif, EXIF_TAG_GPS_LATITUDE, EXIF_TAG_GPS_LATITUDE_REF, &latitude) &&
        gps_coordinate(exif, EXIF_TAG_GPS_LONGITUDE, EXIF_TAG_GPS_LONGITUDE_REF, &longitude) &&
        fabs(latitude) <= 90 && fabs(longitude) <= 180) {
        info->has_gps = 1;
        info->latitude = latitude;
        info->longitude = longitude;
    }
    apple_content_id(exif, info);
}

// MARK: - JPEG and PNG headers

/// A JPEG's frame size from its SOF marker (headers only; bounded walk). @return 1 when found.
static int jpeg_size(FILE *file, int *width, int *height) {
    unsigned char b[8];
    if (fseek(file, 2, SEEK_SET) != 0) return 0;
    for (int markers = 0; markers < 1000; markers++) {
        int c = fgetc(file);
        if (c != 0xFF) return 0;
        do c = fgetc(file);
        while (c == 0xFF);
        if (c == EOF || c == 0xD9 || c == 0xDA) return 0;
        if (c >= 0xD0 && c <= 0xD7) continue;
        if (fread(b, 1, 2, file) != 2) return 0;
        long length = b[0] << 8 | b[1];
        if (length < 2) return 0;
        if (c >= 0xC0 && c <= 0xCF && c != 0xC4 && c != 0xC8 && c != 0xCC) {
            if (fread(b, 1, 5, file) != 5) return 0;
            *height = b[1] << 8 | b[2];
            *width = b[3] << 8 | b[4];
            return *width > 0 && *height > 0;
        }
        if (fseek(file, length - 2, SEEK_CUR) != 0) return 0;
    }
    return 0;
}

/// The EXIF block of the JPEG on `fd`, through libexif's loader, which reads only up to the APP1 segment it wants.
static ExifData *jpeg_exif(int fd) {
    ExifLoader *loader = exif_loader_new();
    if (loader == NULL) return NULL;
    fd_reader reader = {.fd = fd, .position = 0, .size = file_size(fd)};
    unsigned char buffer[4096];
    for (;;) {
        int64_t n = fd_reader_read(&reader, buffer, sizeof buffer);
        if (n <= 0 || !exif_loader_write(loader, buffer, (unsigned)n)) break;
    }
    ExifData *exif = exif_loader_get_data(loader);
    exif_loader_unref(loader);
    return exif;
}

static int probe_jpeg_png(int fd, enum container c, media_info *info) {
    info->kind = 1;
    info->orientation = 1;
    snprintf(info->format, sizeof info->format, "%s", c == C_JPEG ? "jpeg" : "png");
    FILE *file = thumb_stream_at_start(fd);
    if (file == NULL) {
        set_error(info, "cannot read the file");
        return -1;
    }
    int w = 0, h = 0;
    if (c == C_JPEG) jpeg_size(file, &w, &h);
    else {
        unsigned char ihdr[24];
        if (fread(ihdr, 1, 24, file) == 24 && memcmp(ihdr + 12, "IHDR", 4) == 0) {
            w = (int)((uint32_t)ihdr[16] << 24 | (uint32_t)ihdr[17] << 16 | (uint32_t)ihdr[18] << 8 | ihdr[19]);
            h = (int)((uint32_t)ihdr[20] << 24 | (uint32_t)ihdr[21] << 16 | (uint32_t)ihdr[22] << 8 | ihdr[23]);
            if (w < 0 || h < 0) w = h = 0;
        }
    }
    fclose(file);
    if (c == C_JPEG) {
        ExifData *exif = jpeg_exif(fd);
        if (exif != NULL) {
            read_exif(exif, info, 1);
            exif_data_unref(exif);
        }
    }
    int swap = info->orientation >= 5;
    info->width = swap ? h : w;
    info->height = swap ? w : h;
    return 0;
}

// MARK: - HEIF and AVIF

static int heif_failed(struct heif_error error, media_info *info) {
    if (error.code == heif_error_Ok) return 0;
    snprintf(info->error, sizeof info->error, "libheif: %s", error.message ? error.message : "error");
    return 1;
}

static int64_t heif_position(void *userdata) { return ((fd_reader *)userdata)->position; }

static int heif_read(void *data, size_t size, void *userdata) {
    return fd_reader_read(userdata, data, size) == (int64_t)size ? 0 : -1;
}

static int heif_seek(int64_t position, void *userdata) {
    fd_reader *r = userdata;
    if (position < 0 || position > r->size) return -1;
    r->position = position;
    return 0;
}

static enum heif_reader_grow_status heif_wait(int64_t target_size, void *userdata) {
    return target_size <= ((fd_reader *)userdata)->size ? heif_reader_grow_status_size_reached
                                                          : heif_reader_grow_status_size_beyond_eof;
}

static const struct heif_reader heif_fd_reader = {
    .reader_api_version = 1,
    .get_position = heif_position,
    .read = heif_read,
    .seek = heif_seek,
    .wait_for_file_size = heif_wait,
};

/// Opens the primary image of the file on `fd` (read through `reader`, which must outlive the context), refusing declared sizes beyond the limit before anything is decoded.
static struct heif_context *heif_open(fd_reader *reader, const media_limits *limits,
                                      struct heif_image_handle **handle, media_info *info) {
    struct heif_context *context = heif_context_alloc();
    if (context == NULL) {
        set_error(info, "out of memory");
        return NULL;
    }
    // libheif's own check of each image's declared width and height, on top of ours on their product below.
    heif_context_set_maximum_image_size_limit(context, 65535);
    if (heif_failed(heif_context_read_from_reader(context, &heif_fd_reader, reader, NULL), info) ||
        heif_failed(heif_context_get_primary_image_handle(context, handle), info)) {
        heif_context_free(context);
        return NULL;
    }
    int w = heif_image_handle_get_width(*handle), h = heif_image_handle_get_height(*handle);
    if (w <= 0 || h <= 0 || (uint64_t)w * (uint64_t)h > limits->max_pixels) {
        snprintf(info->error, sizeof info->error, "declared size %d x %d is beyond the limit", w, h);
        info->width = w;
        info->height = h;
        heif_image_handle_release(*handle);
        heif_context_free(context);
        return NULL;
    }
    return context;
}

static void heif_exif(struct heif_image_handle *handle, media_info *info) {
    heif_item_id ids[4];
    int count = heif_image_handle_get_list_of_metadata_block_IDs(handle, "Exif", ids, 4);
    if (count < 1) return;
    size_t size = heif_image_handle_get_metadata_size(handle, ids[0]);
    if (size < 8 || size > MAX_EXIF_BYTES) return;
    unsigned char *block = malloc(size + 6);
    if (block == NULL) return;
    if (heif_image_handle_get_metadata(handle, ids[0], block + 6).code == heif_error_Ok) {
        // The block starts with the offset of the TIFF header; libexif wants "Exif\0\0" and then the header.
        uint32_t skip = (uint32_t)block[6] << 24 | (uint32_t)block[7] << 16 | (uint32_t)block[8] << 8 | block[9];
        if (skip <= size - 4) {
            unsigned char *tiff = block + 10 + skip;
            size_t length = size - 4 - skip;
            memcpy(tiff - 6, "Exif\0\0", 6);
            ExifData *exif = exif_data_new_from_data(tiff - 6, (unsigned)(length + 6));
            if (exif != NULL) {
                // irot/imir are the orientation of a HEIF image, and libheif applies them: the EXIF tag repeats it.
                read_exif(exif, info, 0);
                exif_data_unref(exif);
            }
        }
    }
    free(block);
}

static int probe_heif(int fd, enum container c, const media_limits *limits, media_info *info) {
    info->kind = 1;
    info->orientation = 1;
    snprintf(info->format, sizeof info->format, "%s", c == C_AVIF ? "avif" : "heic");
    struct heif_image_handle *handle = NULL;
    fd_reader reader = {.fd = fd, .position = 0, .size = file_size(fd)};
    struct heif_context *context = heif_open(&reader, limits, &handle, info);
    if (context == NULL) return -1;
    info->width = heif_image_handle_get_width(handle);
    info->height = heif_image_handle_get_height(handle);
    heif_exif(handle, info);
    heif_image_handle_release(handle);
    heif_context_free(context);
    return 0;
}

/// Decodes `handle` (transformations applied) and fits it into `max_side`.
static unsigned char *heif_pixels(struct heif_image_handle *handle, int max_side, int *w, int *h, media_info *info) {
    int alpha = heif_image_handle_has_alpha_channel(handle);
    struct heif_image *image = NULL;
    if (heif_failed(heif_decode_image(handle, &image, heif_colorspace_RGB,
                                      alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB, NULL),
                    info))
        return NULL;
    int stride = 0;
    const uint8_t *plane = heif_image_get_plane_readonly(image, heif_channel_interleaved, &stride);
    int iw = heif_image_get_width(image, heif_channel_interleaved);
    int ih = heif_image_get_height(image, heif_channel_interleaved);
    unsigned char *rgb = NULL;
    if (plane != NULL && iw > 0 && ih > 0)
        rgb = thumb_fit_rgb(plane, iw, ih, stride, alpha ? 4 : 3, max_side > 0 ? max_side : (iw > ih ? iw : ih), 1,
                            w, h);
    if (rgb == NULL) set_error(info, "cannot convert the decoded image");
    heif_image_release(image);
    return rgb;
}

static unsigned char *render_heif(int fd, int max_side, const media_limits *limits, int *w, int *h,
                                  media_info *info) {
    struct heif_image_handle *handle = NULL;
    fd_reader reader = {.fd = fd, .position = 0, .size = file_size(fd)};
    struct heif_context *context = heif_open(&reader, limits, &handle, info);
    if (context == NULL) return NULL;
    info->width = heif_image_handle_get_width(handle);
    info->height = heif_image_handle_get_height(handle);
    // A phone's embedded thumbnail is enough for a grid tile when it is at least as large, and far cheaper.
    struct heif_image_handle *source = handle;
    heif_item_id thumbs[4];
    int count = max_side > 0 ? heif_image_handle_get_list_of_thumbnail_IDs(handle, thumbs, 4) : 0;
    for (int i = 0; i < count && source == handle; i++) {
        struct heif_image_handle *thumb = NULL;
        if (heif_image_handle_get_thumbnail(handle, thumbs[i], &thumb).code != heif_error_Ok) continue;
        int tw = heif_image_handle_get_width(thumb), th = heif_image_handle_get_height(thumb);
        if ((tw > th ? tw : th) >= max_side && (uint64_t)tw * (uint64_t)th <= limits->max_pixels) source = thumb;
        else heif_image_handle_release(thumb);
    }
    unsigned char *rgb = heif_pixels(source, max_side, w, h, info);
    if (source != handle) heif_image_handle_release(source);
    heif_image_handle_release(handle);
    heif_context_free(context);
    return rgb;
}

// MARK: - Video

static const char *tag(AVFormatContext *format, AVStream *stream, const char *key) {
    AVDictionaryEntry *entry = av_dict_get(format->metadata, key, NULL, 0);
    if (entry == NULL && stream != NULL) entry = av_dict_get(stream->metadata, key, NULL, 0);
    return entry != NULL ? entry->value : NULL;
}

static int stream_rotation(AVStream *stream) {
    size_t size = 0;
    uint8_t *matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (matrix == NULL || size < 9 * sizeof(int32_t)) return 0;
    double theta = -av_display_rotation_get((const int32_t *)matrix);
    if (isnan(theta)) return 0;
    int degrees = ((int)lround(theta / 90) * 90) % 360;
    return degrees < 0 ? degrees + 360 : degrees;
}

static int rotation_orientation(int degrees) { return degrees == 90 ? 6 : degrees == 180 ? 3 : degrees == 270 ? 8 : 1; }

static int fd_avio_read(void *opaque, uint8_t *buffer, int size) {
    int64_t n = size > 0 ? fd_reader_read(opaque, buffer, (size_t)size) : 0;
    return n > 0 ? (int)n : AVERROR_EOF;
}

static int64_t fd_avio_seek(void *opaque, int64_t offset, int whence) {
    fd_reader *r = opaque;
    if (whence & AVSEEK_SIZE) return r->size;
    int64_t base = (whence & ~AVSEEK_FORCE) == SEEK_CUR ? r->position : (whence & ~AVSEEK_FORCE) == SEEK_END ? r->size : 0;
    if (offset > INT64_MAX - base || base + offset < 0) return AVERROR(EINVAL);
    r->position = base + offset;
    return r->position;
}

/// A video read through `fd`: FFmpeg's own I/O never opens anything (custom I/O, no protocol but ours), and only
/// the demuxers of VIDEO_FORMATS may parse it.
typedef struct {
    fd_reader reader;
    AVIOContext *io;
    AVFormatContext *format;
} video_file;

static void video_close(video_file *video) {
    avformat_close_input(&video->format);
    if (video->io != NULL) av_freep(&video->io->buffer);
    avio_context_free(&video->io);
}

/// Opens a video (or, `still`, a GIF, TIFF or BMP image, read as FFmpeg reads a one-frame video) through the demuxers
/// `formats` names, and its best video stream, refusing declared sizes beyond the limits before any frame is
/// decoded.
static AVFormatContext *video_open(video_file *video, int fd, const char *formats, int still,
                                   const media_limits *limits, int *stream_index, media_info *info) {
    uint64_t max_pixels = still ? limits->max_pixels : limits->max_video_pixels;
    video->reader = (fd_reader){.fd = fd, .position = 0, .size = file_size(fd)};
    unsigned char *buffer = av_malloc(64 * 1024);
    video->io = buffer ? avio_alloc_context(buffer, 64 * 1024, 0, &video->reader, fd_avio_read, NULL, fd_avio_seek) : NULL;
    video->format = video->io ? avformat_alloc_context() : NULL;
    if (video->format == NULL) {
        if (video->io == NULL) av_free(buffer);
        video_close(video);
        set_error(info, "out of memory");
        return NULL;
    }
    video->format->pb = video->io;
    video->format->flags |= AVFMT_FLAG_CUSTOM_IO;
    AVDictionary *options = NULL;
    av_dict_set(&options, "format_whitelist", formats, 0);
    av_dict_set(&options, "protocol_whitelist", "file,pipe", 0);
    int opened = avformat_open_input(&video->format, NULL, NULL, &options);
    av_dict_free(&options);
    if (opened != 0) {  // avformat_open_input freed the context on failure
        video_close(video);
        set_error(info, still ? "not an image FFmpeg reads" : "not a video FFmpeg reads");
        return NULL;
    }
    AVFormatContext *format = video->format;
    int index = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (index >= 0 && format->streams[index]->codecpar->width <= 0) {
        // Some containers (an image pipe) tell the size only once a frame's header is decoded: the decoders doing it
        // refuse more than the limit's pixels before they allocate a frame.
        AVDictionary **decoding = calloc(format->nb_streams, sizeof *decoding);
        for (unsigned i = 0; decoding != NULL && i < format->nb_streams; i++)
            av_dict_set_int(&decoding[i], "max_pixels", (int64_t)max_pixels, 0);
        if (avformat_find_stream_info(format, decoding) >= 0)
            index = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
        for (unsigned i = 0; decoding != NULL && i < format->nb_streams; i++) av_dict_free(&decoding[i]);
        free(decoding);
    }
    if (index < 0) {
        set_error(info, "no video stream");
        video_close(video);
        return NULL;
    }
    AVStream *stream = format->streams[index];
    AVCodecParameters *codec = stream->codecpar;
    info->kind = still ? 1 : 2;
    const char *name = format->iformat->name;
    const char *shown = strstr(name, "matroska") || strstr(name, "webm") ? "webm" : strstr(name, "mov") ? "mp4" : name;
    const char *pipe = strstr(shown, "_pipe");  // "tiff_pipe" is a "tiff"
    snprintf(info->format, sizeof info->format, "%.*s", (int)(pipe ? (size_t)(pipe - shown) : strlen(shown)), shown);
    info->rotation = stream_rotation(stream);
    info->orientation = rotation_orientation(info->rotation);
    int swap = info->rotation == 90 || info->rotation == 270;
    info->width = swap ? codec->height : codec->width;
    info->height = swap ? codec->width : codec->height;
    if (still) info->duration = 0;  // an animated GIF is a photo here: its first frame
    else if (format->duration > 0) info->duration = (double)format->duration / AV_TIME_BASE;
    else if (stream->duration > 0) info->duration = stream->duration * av_q2d(stream->time_base);
    uint64_t pixels = (uint64_t)(codec->width > 0 ? codec->width : 0) * (uint64_t)(codec->height > 0 ? codec->height : 0);
    if (pixels == 0 || pixels > max_pixels || (double)pixels * info->duration > limits->max_video_pixel_seconds) {
        if (still)
            snprintf(info->error, sizeof info->error, "declared %d x %d is beyond the limit", codec->width,
                     codec->height);
        else
            snprintf(info->error, sizeof info->error, "declared %d x %d for %.0f s is beyond the limit", codec->width,
                     codec->height, info->duration);
        video_close(video);
        return NULL;
    }
    *stream_index = index;
    return format;
}

static void video_metadata(AVFormatContext *format, AVStream *stream, media_info *info) {
    // Apple's creation date keeps the offset; `creation_time` is UTC.
    const char *apple = tag(format, NULL, "com.apple.quicktime.creationdate");
    if (!(apple && parse_date(apple, info->taken, info->offset))) {
        const char *created = tag(format, stream, "creation_time");
        info->offset[0] = 0;
        if (created && parse_date(created, info->taken, info->offset) && info->offset[0] == 0)
            snprintf(info->offset, sizeof info->offset, "Z");
    }
    const char *make = tag(format, NULL, "com.apple.quicktime.make");
    if (make == NULL) make = tag(format, NULL, "make");
    const char *model = tag(format, NULL, "com.apple.quicktime.model");
    if (model == NULL) model = tag(format, NULL, "model");
    if (model == NULL) model = tag(format, NULL, "com.android.model");
    if (make) copy_text(info->make, sizeof info->make, make);
    if (model) copy_text(info->model, sizeof info->model, model);
    const char *location = tag(format, NULL, "com.apple.quicktime.location.ISO6709");
    if (location == NULL) location = tag(format, NULL, "location");
    double latitude, longitude;
    if (location && sscanf(location, "%lf%lf", &latitude, &longitude) == 2 && fabs(latitude) <= 90 &&
        fabs(longitude) <= 180) {
        info->has_gps = 1;
        info->latitude = latitude;
        info->longitude = longitude;
    }
    const char *content = tag(format, NULL, "com.apple.quicktime.content.identifier");
    if (content) copy_text(info->content_id, sizeof info->content_id, content);
}

static int probe_video(int fd, const char *formats, int still, const media_limits *limits, media_info *info) {
    int index = -1;
    video_file video = {0};
    AVFormatContext *format = video_open(&video, fd, formats, still, limits, &index, info);
    if (format == NULL) return -1;
    if (!still) video_metadata(format, format->streams[index], info);
    video_close(&video);
    return 0;
}

/// Decodes frames from a second in (or half the length of a shorter video) until one comes out.
static AVFrame *poster_frame(AVFormatContext *format, int index, AVCodecContext *decoder, double duration) {
    double at = duration > 2 ? 1.0 : duration / 2;
    if (at > 0) av_seek_frame(format, -1, (int64_t)(at * AV_TIME_BASE), AVSEEK_FLAG_BACKWARD);
    AVPacket *packet = av_packet_alloc();
    AVFrame *frame = av_frame_alloc();
    if (packet == NULL || frame == NULL) {
        av_packet_free(&packet);
        av_frame_free(&frame);
        return NULL;
    }
    int found = 0;
    for (int n = 0; n < MAX_POSTER_PACKETS && !found; n++) {
        int read = av_read_frame(format, packet);
        if (read < 0) {
            avcodec_send_packet(decoder, NULL);  // the end: drain what the decoder holds
            found = avcodec_receive_frame(decoder, frame) == 0;
            break;
        }
        if (packet->stream_index == index && avcodec_send_packet(decoder, packet) >= 0)
            found = avcodec_receive_frame(decoder, frame) == 0;
        av_packet_unref(packet);
    }
    av_packet_free(&packet);
    if (!found) av_frame_free(&frame);
    return frame;
}

/// RGBA pixels laid over white, written in place as RGB (three bytes each: the buffer only shrinks).
static void over_white(unsigned char *pixels, size_t count) {
    for (size_t i = 0; i < count; i++) {
        unsigned alpha = pixels[i * 4 + 3];
        for (size_t c = 0; c < 3; c++)
            pixels[i * 3 + c] = (unsigned char)((pixels[i * 4 + c] * alpha + 255 * (255 - alpha) + 127) / 255);
    }
}

/// A video's poster frame a second in, or (`still`) the first frame of an image FFmpeg decodes (GIF, TIFF, BMP),
/// transparency laid over white.
static unsigned char *render_video(int fd, const char *formats, int still, int max_side, const media_limits *limits,
                                   int *w, int *h, media_info *info) {
    int index = -1;
    video_file video = {0};
    AVFormatContext *format = video_open(&video, fd, formats, still, limits, &index, info);
    if (format == NULL) return NULL;
    uint64_t max_pixels = still ? limits->max_pixels : limits->max_video_pixels;
    AVStream *stream = format->streams[index];
    const AVCodec *codec = avcodec_find_decoder(stream->codecpar->codec_id);
    AVCodecContext *decoder = codec ? avcodec_alloc_context3(codec) : NULL;
    unsigned char *rgb = NULL;
    AVFrame *frame = NULL;
    struct SwsContext *scaler = NULL;
    if (decoder == NULL || avcodec_parameters_to_context(decoder, stream->codecpar) < 0) {
        set_error(info, "no decoder for this video");
        goto done;
    }
    decoder->thread_count = 1;
    decoder->max_pixels = (int64_t)max_pixels;
    if (avcodec_open2(decoder, codec, NULL) < 0) {
        set_error(info, "cannot open the video decoder");
        goto done;
    }
    frame = poster_frame(format, index, decoder, still ? 0 : info->duration);
    if (frame == NULL) {
        set_error(info, "no frame could be decoded");
        goto done;
    }
    // The frame's own size, not the header's, bounds what is converted.
    if (frame->width <= 0 || frame->height <= 0 || (uint64_t)frame->width * (uint64_t)frame->height > max_pixels) {
        set_error(info, "decoded frame beyond the limit");
        goto done;
    }
    int longer = frame->width > frame->height ? frame->width : frame->height;
    int side = max_side > 0 && max_side < longer ? max_side : longer;
    int sw = (int)((double)frame->width * side / longer + 0.5), sh = (int)((double)frame->height * side / longer + 0.5);
    if (sw < 1) sw = 1;
    if (sh < 1) sh = 1;
    int channels = still ? 4 : 3;
    scaler = sws_getContext(frame->width, frame->height, (enum AVPixelFormat)frame->format, sw, sh,
                            still ? AV_PIX_FMT_RGBA : AV_PIX_FMT_RGB24, SWS_AREA, NULL, NULL, NULL);
    unsigned char *scaled = scaler ? malloc((size_t)sw * (size_t)sh * (size_t)channels) : NULL;
    if (scaled == NULL) {
        set_error(info, "cannot convert the frame");
        goto done;
    }
    uint8_t *planes[4] = {scaled, NULL, NULL, NULL};
    int strides[4] = {sw * channels, 0, 0, 0};
    sws_scale(scaler, (const uint8_t *const *)frame->data, frame->linesize, 0, frame->height, planes, strides);
    if (still) over_white(scaled, (size_t)sw * (size_t)sh);
    rgb = thumb_fit_rgb(scaled, sw, sh, sw * 3, 3, side, info->orientation, w, h);
    free(scaled);
    if (rgb == NULL) set_error(info, "cannot turn the frame");
done:
    sws_freeContext(scaler);
    av_frame_free(&frame);
    avcodec_free_context(&decoder);
    video_close(&video);
    return rgb;
}

// MARK: - WebP

/// The whole file, which libwebp decodes from memory (at most MAX_WEBP_BYTES).
static unsigned char *webp_bytes(int fd, size_t *size, media_info *info) {
    int64_t total = file_size(fd);
    if (total <= 0 || total > MAX_WEBP_BYTES) {
        set_error(info, total > 0 ? "WebP file beyond the limit" : "cannot read the file");
        return NULL;
    }
    unsigned char *data = malloc((size_t)total);
    fd_reader reader = {.fd = fd, .position = 0, .size = total};
    if (data == NULL || fd_reader_read(&reader, data, (size_t)total) != total) {
        free(data);
        set_error(info, "cannot read the file");
        return NULL;
    }
    *size = (size_t)total;
    return data;
}

/// The date and camera of a WebP's EXIF chunk (raw TIFF, or with the "Exif\0\0" header some writers add).
static void webp_exif(const unsigned char *data, size_t size, media_info *info) {
    WebPData webp = {data, size};
    WebPDemuxer *demux = WebPDemux(&webp);
    if (demux == NULL) return;
    WebPChunkIterator chunk;
    if (WebPDemuxGetChunk(demux, "EXIF", 1, &chunk)) {
        const uint8_t *bytes = chunk.chunk.bytes;
        size_t n = chunk.chunk.size;
        ExifData *exif = NULL;
        if (n >= 6 && memcmp(bytes, "Exif\0\0", 6) == 0 && n <= MAX_EXIF_BYTES) {
            exif = exif_data_new_from_data(bytes, (unsigned)n);
        } else if (n > 0 && n <= MAX_EXIF_BYTES) {
            unsigned char *framed = malloc(n + 6);
            if (framed != NULL) {
                memcpy(framed, "Exif\0\0", 6);
                memcpy(framed + 6, bytes, n);
                exif = exif_data_new_from_data(framed, (unsigned)(n + 6));
                free(framed);
            }
        }
        if (exif != NULL) {
            read_exif(exif, info, 0);  // browsers show a WebP as stored: its orientation tag is not applied
            exif_data_unref(exif);
        }
        WebPDemuxReleaseChunkIterator(&chunk);
    }
    WebPDemuxDelete(demux);
}

static int webp_features(const unsigned char *data, size_t size, const media_limits *limits,
                         WebPBitstreamFeatures *features, media_info *info) {
    if (WebPGetFeatures(data, size, features) != VP8_STATUS_OK || features->width <= 0 || features->height <= 0) {
        set_error(info, "not a WebP image libwebp reads");
        return -1;
    }
    if ((uint64_t)features->width * (uint64_t)features->height > limits->max_pixels) {
        snprintf(info->error, sizeof info->error, "declared %d x %d is beyond the limit", features->width,
                 features->height);
        return -1;
    }
    return 0;
}

static int probe_webp(int fd, const media_limits *limits, media_info *info) {
    size_t size = 0;
    unsigned char *data = webp_bytes(fd, &size, info);
    if (data == NULL) return -1;
    WebPBitstreamFeatures features;
    int rc = webp_features(data, size, limits, &features, info);
    if (rc == 0) {
        info->kind = 1;
        info->orientation = 1;
        snprintf(info->format, sizeof info->format, "webp");
        info->width = features.width;
        info->height = features.height;
        webp_exif(data, size, info);
    }
    free(data);
    return rc;
}

/// A still WebP decoded straight to its thumbnail size (libwebp's scaler), an animated one's first frame; either
/// laid over white.
static unsigned char *render_webp(int fd, int max_side, const media_limits *limits, int *w, int *h,
                                  media_info *info) {
    size_t size = 0;
    unsigned char *data = webp_bytes(fd, &size, info);
    if (data == NULL) return NULL;
    unsigned char *rgba = NULL, *rgb = NULL;
    int width = 0, height = 0;
    WebPBitstreamFeatures features;
    if (webp_features(data, size, limits, &features, info) != 0) goto done;
    if (features.has_animation) {
        WebPAnimDecoderOptions options;
        if (!WebPAnimDecoderOptionsInit(&options)) goto failed;
        options.color_mode = MODE_RGBA;
        options.use_threads = 0;
        WebPData webp = {data, size};
        WebPAnimDecoder *decoder = WebPAnimDecoderNew(&webp, &options);
        WebPAnimInfo animation;
        uint8_t *frame = NULL;
        int timestamp = 0;
        if (decoder != NULL && WebPAnimDecoderGetInfo(decoder, &animation) && animation.canvas_width > 0 &&
            animation.canvas_height > 0 &&
            (uint64_t)animation.canvas_width * animation.canvas_height <= limits->max_pixels &&
            WebPAnimDecoderGetNext(decoder, &frame, &timestamp) && frame != NULL) {
            width = (int)animation.canvas_width;
            height = (int)animation.canvas_height;
            size_t bytes = (size_t)width * (size_t)height * 4;
            rgba = malloc(bytes);
            if (rgba != NULL) memcpy(rgba, frame, bytes);
        }
        WebPAnimDecoderDelete(decoder);
    } else {
        int longer = features.width > features.height ? features.width : features.height;
        int side = max_side > 0 && max_side < longer ? max_side : longer;
        width = (int)((double)features.width * side / longer + 0.5);
        height = (int)((double)features.height * side / longer + 0.5);
        if (width < 1) width = 1;
        if (height < 1) height = 1;
        WebPDecoderConfig config;
        if (!WebPInitDecoderConfig(&config)) goto failed;
        config.options.use_scaling = 1;
        config.options.scaled_width = width;
        config.options.scaled_height = height;
        config.output.colorspace = MODE_RGBA;
        config.output.is_external_memory = 1;
        size_t bytes = (size_t)width * (size_t)height * 4;
        rgba = malloc(bytes);
        if (rgba == NULL) goto failed;
        config.output.u.RGBA.rgba = rgba;
        config.output.u.RGBA.stride = width * 4;
        config.output.u.RGBA.size = bytes;
        if (WebPDecode(data, size, &config) != VP8_STATUS_OK) {
            free(rgba);
            rgba = NULL;
        }
        WebPFreeDecBuffer(&config.output);
    }
failed:
    if (rgba == NULL) {
        set_error(info, "cannot decode the WebP image");
        goto done;
    }
    over_white(rgba, (size_t)width * (size_t)height);
    rgb = thumb_fit_rgb(rgba, width, height, width * 3, 3, max_side, 1, w, h);
    if (rgb == NULL) set_error(info, "cannot scale the image");
done:
    free(rgba);
    free(data);
    return rgb;
}

/// The demuxer each still image FFmpeg reads may reach.
static const char *still_formats(enum container c) {
    return c == C_GIF ? "gif" : c == C_TIFF ? "tiff_pipe" : "bmp_pipe";
}

// MARK: - Entry points

int media_container(int fd) {
    media_info ignored;
    switch (sniff_file(fd, &ignored)) {
    case C_JPEG:
    case C_PNG: return 1;
    case C_HEIF:
    case C_AVIF: return 2;
    case C_VIDEO: return 3;
    case C_GIF:
    case C_TIFF:
    case C_BMP:
    case C_WEBP: return 4;
    default: return 0;
    }
}

int media_probe(int fd, const media_limits *limits, media_info *info) {
    memset(info, 0, sizeof *info);
    av_log_set_level(AV_LOG_QUIET);
    enum container c = sniff_file(fd, info);
    switch (c) {
    case C_JPEG:
    case C_PNG: return probe_jpeg_png(fd, c, info);
    case C_HEIF:
    case C_AVIF: return probe_heif(fd, c, limits, info);
    case C_VIDEO: return probe_video(fd, VIDEO_FORMATS, 0, limits, info);
    case C_GIF:
    case C_TIFF:
    case C_BMP: return probe_video(fd, still_formats(c), 1, limits, info);
    case C_WEBP: return probe_webp(fd, limits, info);
    default: return -1;
    }
}

int media_render(int fd, int max_side, int quality, const media_limits *limits, unsigned char **out,
                 size_t *out_len, media_info *info) {
    memset(info, 0, sizeof *info);
    av_log_set_level(AV_LOG_QUIET);
    *out = NULL;
    *out_len = 0;
    enum container c = sniff_file(fd, info);
    int w = 0, h = 0;
    unsigned char *rgb = NULL;
    if (c == C_HEIF || c == C_AVIF) rgb = render_heif(fd, max_side, limits, &w, &h, info);
    else if (c == C_VIDEO) rgb = render_video(fd, VIDEO_FORMATS, 0, max_side, limits, &w, &h, info);
    else if (c == C_GIF || c == C_TIFF || c == C_BMP)
        rgb = render_video(fd, still_formats(c), 1, max_side, limits, &w, &h, info);
    else if (c == C_WEBP) rgb = render_webp(fd, max_side, limits, &w, &h, info);
    else if (c != C_UNKNOWN) set_error(info, "JPEG and PNG are the thumbnailer's");
    if (rgb == NULL) return -1;
    int rc = thumb_encode_jpeg(rgb, w, h, quality, out, out_len);
    free(rgb);
    if (rc != 0) set_error(info, "cannot encode the JPEG");
    return rc;
}

void media_free(void *pointer) { free(pointer); }

int media_prepare(void) { return heif_init(NULL).code == heif_error_Ok ? 0 : -1; }
