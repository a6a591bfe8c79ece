// Thumbnails from JPEG and PNG files with libjpeg-turbo and libpng, in C because both libraries
// report errors by longjmp, which Swift cannot catch. Every entry point returns an error code;
// nothing here aborts the process on bad input.
#include "thumbnail.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
// jpeglib.h needs <stdio.h> first.
#include <jpeglib.h>
#include <png.h>

static void set_error(thumb_info *info, const char *message) {
    if (info == NULL) return;
    snprintf(info->error, sizeof info->error, "%s", message);
}

// MARK: - Box downsampler

/// Averages source rows into the thumbnail as they arrive: memory is the thumbnail plus one
/// accumulator row, whatever the source size.
typedef struct {
    int in_w, in_h, out_w, out_h;
    int *x_map;
    uint32_t *sums;
    uint32_t *counts;
    unsigned char *out;
    int current;
} sampler;

static void target_size(int w, int h, int max_side, int *out_w, int *out_h) {
    int longer = w > h ? w : h;
    if (longer <= max_side) {
        *out_w = w;
        *out_h = h;
        return;
    }
    double scale = (double)max_side / (double)longer;
    *out_w = (int)(w * scale + 0.5);
    *out_h = (int)(h * scale + 0.5);
    if (*out_w < 1) *out_w = 1;
    if (*out_h < 1) *out_h = 1;
}

static int sampler_init(sampler *s, int in_w, int in_h, int max_side) {
    memset(s, 0, sizeof *s);
    s->in_w = in_w;
    s->in_h = in_h;
    target_size(in_w, in_h, max_side, &s->out_w, &s->out_h);
    s->x_map = malloc(sizeof(int) * (size_t)in_w);
    s->sums = calloc((size_t)s->out_w * 3, sizeof(uint32_t));
    s->counts = calloc((size_t)s->out_w, sizeof(uint32_t));
    s->out = calloc((size_t)s->out_w * (size_t)s->out_h * 3, 1);
    s->current = 0;
    if (!s->x_map || !s->sums || !s->counts || !s->out) return -1;
    for (int x = 0; x < in_w; x++) s->x_map[x] = (int)((int64_t)x * s->out_w / in_w);
    return 0;
}

static void sampler_flush(sampler *s) {
    if (s->current >= s->out_h) return;
    unsigned char *row = s->out + (size_t)s->current * (size_t)s->out_w * 3;
    for (int x = 0; x < s->out_w; x++) {
        uint32_t n = s->counts[x];
        if (n == 0) continue;
        for (int c = 0; c < 3; c++) row[x * 3 + c] = (unsigned char)((s->sums[x * 3 + c] + n / 2) / n);
        s->sums[x * 3] = s->sums[x * 3 + 1] = s->sums[x * 3 + 2] = 0;
        s->counts[x] = 0;
    }
}

/// Adds source row `y`: `channels` is 3 (RGB) or 4 (RGBA, composited over white).
static void sampler_row(sampler *s, int y, const unsigned char *row, int channels) {
    int oy = (int)((int64_t)y * s->out_h / s->in_h);
    if (oy != s->current) {
        sampler_flush(s);
        s->current = oy;
    }
    for (int x = 0; x < s->in_w; x++) {
        const unsigned char *p = row + (size_t)x * (size_t)channels;
        uint32_t r = p[0], g = p[1], b = p[2];
        if (channels == 4) {
            uint32_t a = p[3];
            r = (r * a + 255 * (255 - a)) / 255;
            g = (g * a + 255 * (255 - a)) / 255;
            b = (b * a + 255 * (255 - a)) / 255;
        }
        int ox = s->x_map[x];
        s->sums[ox * 3] += r;
        s->sums[ox * 3 + 1] += g;
        s->sums[ox * 3 + 2] += b;
        s->counts[ox] += 1;
    }
}

static void sampler_free(sampler *s) {
    free(s->x_map);
    free(s->sums);
    free(s->counts);
    free(s->out);
    memset(s, 0, sizeof *s);
}

// MARK: - EXIF orientation

static unsigned read16(const unsigned char *p, int little) {
    return little ? (unsigned)(p[0] | p[1] << 8) : (unsigned)(p[0] << 8 | p[1]);
}

static uint32_t read32(const unsigned char *p, int little) {
    return little ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
                  : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int thumb_exif_orientation(const unsigned char *data, size_t length) {
    if (data == NULL) return 1;
    if (length >= 6 && memcmp(data, "Exif\0\0", 6) == 0) {
        data += 6;
        length -= 6;
    }
    if (length < 8) return 1;
    int little;
    if (data[0] == 'I' && data[1] == 'I') little = 1;
    else if (data[0] == 'M' && data[1] == 'M') little = 0;
    else return 1;
    if (read16(data + 2, little) != 42) return 1;
    uint32_t ifd = read32(data + 4, little);
    if (ifd > length || length - ifd < 2) return 1;
    unsigned count = read16(data + ifd, little);
    size_t entries = (size_t)ifd + 2;
    for (unsigned i = 0; i < count; i++) {
        size_t at = entries + (size_t)i * 12;
        if (at > length || length - at < 12) return 1;
        const unsigned char *entry = data + at;
        if (read16(entry, little) != 0x0112) continue;
        if (read16(entry + 2, little) != 3 || read32(entry + 4, little) != 1) return 1;
        unsigned value = read16(entry + 8, little);
        return value >= 1 && value <= 8 ? (int)value : 1;
    }
    return 1;
}

// MARK: - Orientation

/// A new buffer with `src` (w x h RGB) turned as EXIF `orientation` says; sizes swapped for 5-8.
static unsigned char *orient(const unsigned char *src, int w, int h, int orientation, int *out_w, int *out_h) {
    int swap = orientation >= 5;
    int dw = swap ? h : w, dh = swap ? w : h;
    unsigned char *dst = malloc((size_t)dw * (size_t)dh * 3);
    if (dst == NULL) return NULL;
    for (int y = 0; y < dh; y++) {
        for (int x = 0; x < dw; x++) {
            int sx, sy;
            switch (orientation) {
            case 2: sx = w - 1 - x; sy = y; break;
            case 3: sx = w - 1 - x; sy = h - 1 - y; break;
            case 4: sx = x; sy = h - 1 - y; break;
            case 5: sx = y; sy = x; break;
            case 6: sx = y; sy = h - 1 - x; break;
            case 7: sx = w - 1 - y; sy = h - 1 - x; break;
            case 8: sx = w - 1 - y; sy = x; break;
            default: sx = x; sy = y; break;
            }
            memcpy(dst + ((size_t)y * dw + x) * 3, src + ((size_t)sy * w + sx) * 3, 3);
        }
    }
    *out_w = dw;
    *out_h = dh;
    return dst;
}

// MARK: - libjpeg error handling

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
} jpeg_error;

static void jpeg_on_error(j_common_ptr cinfo) {
    jpeg_error *error = (jpeg_error *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, error->message);
    longjmp(error->jump, 1);
}

static void jpeg_on_message(j_common_ptr cinfo, int level) {
    (void)cinfo;
    (void)level;  // warnings (a truncated file) are tolerated: what was decoded is shown
}

// MARK: - JPEG encoding

int thumb_encode_jpeg(const unsigned char *rgb, int width, int height, int quality, unsigned char **out,
                      size_t *out_len) {
    struct jpeg_compress_struct cinfo;
    jpeg_error error;
    unsigned char *volatile buffer = NULL;
    unsigned long size = 0;
    cinfo.err = jpeg_std_error(&error.pub);
    error.pub.error_exit = jpeg_on_error;
    error.pub.emit_message = jpeg_on_message;
    if (setjmp(error.jump)) {
        jpeg_destroy_compress(&cinfo);
        free(buffer);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    unsigned char *mem = NULL;
    jpeg_mem_dest(&cinfo, &mem, &size);
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)cinfo.next_scanline * (size_t)width * 3);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    buffer = mem;
    jpeg_destroy_compress(&cinfo);
    *out = buffer;
    *out_len = size;
    return 0;
}

int thumb_write_test_jpeg(const char *path, int width, int height, int progressive) {
    FILE *file = fopen(path, "wb");
    if (file == NULL) return -1;
    struct jpeg_compress_struct cinfo;
    jpeg_error error;
    unsigned char *volatile row = malloc((size_t)width * 3);
    cinfo.err = jpeg_std_error(&error.pub);
    error.pub.error_exit = jpeg_on_error;
    error.pub.emit_message = jpeg_on_message;
    if (row == NULL || setjmp(error.jump)) {
        jpeg_destroy_compress(&cinfo);
        free(row);
        fclose(file);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, file);
    cinfo.image_width = (JDIMENSION)width;
    cinfo.image_height = (JDIMENSION)height;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 80, TRUE);
    if (progressive) jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        int y = (int)cinfo.next_scanline;
        for (int x = 0; x < width; x++) {
            row[x * 3] = (unsigned char)(x * 255 / (width > 1 ? width - 1 : 1));
            row[x * 3 + 1] = (unsigned char)(y * 255 / (height > 1 ? height - 1 : 1));
            row[x * 3 + 2] = 128;
        }
        JSAMPROW pointer = row;
        jpeg_write_scanlines(&cinfo, &pointer, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    free(row);
    return fclose(file) == 0 ? 0 : -1;
}

int thumb_decode_jpeg_memory(const unsigned char *data, size_t length, unsigned char **rgb, int *width,
                             int *height) {
    struct jpeg_decompress_struct cinfo;
    jpeg_error error;
    unsigned char *volatile pixels = NULL;
    cinfo.err = jpeg_std_error(&error.pub);
    error.pub.error_exit = jpeg_on_error;
    error.pub.emit_message = jpeg_on_message;
    if (setjmp(error.jump)) {
        jpeg_destroy_decompress(&cinfo);
        free(pixels);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, data, (unsigned long)length);
    jpeg_read_header(&cinfo, TRUE);
    cinfo.out_color_space = JCS_RGB;
    jpeg_start_decompress(&cinfo);
    pixels = malloc((size_t)cinfo.output_width * cinfo.output_height * 3);
    if (pixels == NULL) longjmp(error.jump, 1);
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = pixels + (size_t)cinfo.output_scanline * cinfo.output_width * 3;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    *width = (int)cinfo.output_width;
    *height = (int)cinfo.output_height;
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    *rgb = pixels;
    return 0;
}

// MARK: - JPEG decoding into the sampler

typedef struct {
    sampler s;
    unsigned char *row;
} decode_state;

static int decode_jpeg(FILE *file, int max_side, size_t memory_limit, uint64_t max_pixels, decode_state *state,
                       thumb_info *info) {
    struct jpeg_decompress_struct cinfo;
    jpeg_error error;
    cinfo.err = jpeg_std_error(&error.pub);
    error.pub.error_exit = jpeg_on_error;
    error.pub.emit_message = jpeg_on_message;
    if (setjmp(error.jump)) {
        set_error(info, error.message);
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    jpeg_create_decompress(&cinfo);
    // Caps libjpeg's large allocations (a progressive image's coefficient buffer): past it the
    // decode fails ("backing store not supported") instead of growing.
    cinfo.mem->max_memory_to_use = (long)memory_limit;
    jpeg_stdio_src(&cinfo, file);
    jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(&cinfo, TRUE);
    info->source_width = (int)cinfo.image_width;
    info->source_height = (int)cinfo.image_height;
    if ((uint64_t)cinfo.image_width * cinfo.image_height > max_pixels) {
        snprintf(error.message, sizeof error.message, "image of %ux%u pixels is over the limit", cinfo.image_width,
                 cinfo.image_height);
        longjmp(error.jump, 1);
    }
    for (jpeg_saved_marker_ptr marker = cinfo.marker_list; marker != NULL; marker = marker->next) {
        if (marker->marker == JPEG_APP0 + 1 && marker->data_length >= 6 && memcmp(marker->data, "Exif\0\0", 6) == 0) {
            info->orientation = thumb_exif_orientation(marker->data, marker->data_length);
            break;
        }
    }
    // The smallest DCT scale (n/8) whose output still covers the thumbnail: a 1/8 decode of a
    // huge photo costs a sixty-fourth of the work and memory of a full one.
    int want_w, want_h;
    target_size((int)cinfo.image_width, (int)cinfo.image_height, max_side, &want_w, &want_h);
    unsigned num = 8;
    for (unsigned n = 1; n <= 8; n++) {
        if ((cinfo.image_width * n + 7) / 8 >= (unsigned)want_w && (cinfo.image_height * n + 7) / 8 >= (unsigned)want_h) {
            num = n;
            break;
        }
    }
    cinfo.scale_num = num;
    cinfo.scale_denom = 8;
    int cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    int w = (int)cinfo.output_width, h = (int)cinfo.output_height;
    if (sampler_init(&state->s, w, h, max_side) != 0) {
        snprintf(error.message, sizeof error.message, "out of memory");
        longjmp(error.jump, 1);
    }
    state->row = malloc((size_t)w * (size_t)cinfo.output_components);
    if (state->row == NULL) {
        snprintf(error.message, sizeof error.message, "out of memory");
        longjmp(error.jump, 1);
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        int y = (int)cinfo.output_scanline;
        JSAMPROW row = state->row;
        if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) break;
        if (cmyk) {
            // Adobe writes inverted CMYK; multiply by K for a plain RGB approximation.
            int inverted = cinfo.saw_Adobe_marker;
            for (int x = 0; x < w; x++) {
                unsigned char *p = state->row + (size_t)x * 4;
                unsigned c = p[0], m = p[1], yel = p[2], k = p[3];
                if (!inverted) {
                    c = 255 - c;
                    m = 255 - m;
                    yel = 255 - yel;
                    k = 255 - k;
                }
                state->row[x * 3] = (unsigned char)(c * k / 255);
                state->row[x * 3 + 1] = (unsigned char)(m * k / 255);
                state->row[x * 3 + 2] = (unsigned char)(yel * k / 255);
            }
        }
        sampler_row(&state->s, y, state->row, 3);
    }
    sampler_flush(&state->s);
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return 0;
}

// MARK: - PNG

typedef struct {
    char message[160];
} png_context;

static void png_on_error(png_structp png, png_const_charp message) {
    png_context *context = png_get_error_ptr(png);
    if (context) snprintf(context->message, sizeof context->message, "%s", message);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp message) {
    (void)png;
    (void)message;
}

int thumb_write_png(const char *path, const unsigned char *rgba, int width, int height, int interlaced) {
    FILE *file = fopen(path, "wb");
    if (file == NULL) return -1;
    png_context context = {{0}};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &context, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (png == NULL || info == NULL || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(file);
        return -1;
    }
    png_init_io(png, file);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_RGBA,
                 interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    int passes = png_set_interlace_handling(png);
    for (int pass = 0; pass < passes; pass++) {
        for (int y = 0; y < height; y++) png_write_row(png, rgba + (size_t)y * (size_t)width * 4);
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return fclose(file) == 0 ? 0 : -1;
}

typedef struct {
    sampler s;
    unsigned char *row;
    unsigned char *image;
} png_state;

static int decode_png(FILE *file, int max_side, size_t memory_limit, uint64_t max_pixels, png_state *state,
                      thumb_info *info) {
    png_context context = {{0}};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &context, png_on_error, png_on_warning);
    png_infop pinfo = png ? png_create_info_struct(png) : NULL;
    if (png == NULL || pinfo == NULL) {
        png_destroy_read_struct(&png, &pinfo, NULL);
        set_error(info, "out of memory");
        return -1;
    }
    if (setjmp(png_jmpbuf(png))) {
        set_error(info, context.message[0] ? context.message : "corrupt PNG");
        png_destroy_read_struct(&png, &pinfo, NULL);
        return -1;
    }
    png_init_io(png, file);
    png_set_user_limits(png, 1000000, 1000000);
    png_set_chunk_malloc_max(png, 16 * 1024 * 1024);
    png_read_info(png, pinfo);
    png_uint_32 w = png_get_image_width(png, pinfo), h = png_get_image_height(png, pinfo);
    info->source_width = (int)w;
    info->source_height = (int)h;
    if ((uint64_t)w * h > max_pixels) png_error(png, "image is over the pixel limit");
    png_uint_32 exif_length = 0;
    png_bytep exif = NULL;
    if (png_get_eXIf_1(png, pinfo, &exif_length, &exif) != 0 && exif != NULL) {
        info->orientation = thumb_exif_orientation(exif, exif_length);
    }
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_gray_to_rgb(png);
    png_set_filler(png, 0xff, PNG_FILLER_AFTER);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, pinfo);
    if (png_get_rowbytes(png, pinfo) != (size_t)w * 4) png_error(png, "unexpected row layout");
    if (sampler_init(&state->s, (int)w, (int)h, max_side) != 0) png_error(png, "out of memory");
    if (passes > 1) {
        // Adam7 needs every row until the last pass: only within the memory budget.
        if ((uint64_t)w * h * 4 > memory_limit) png_error(png, "interlaced image is over the memory limit");
        state->image = malloc((size_t)w * h * 4);
        if (state->image == NULL) png_error(png, "out of memory");
        for (int pass = 0; pass < passes; pass++) {
            for (png_uint_32 y = 0; y < h; y++) png_read_row(png, state->image + (size_t)y * w * 4, NULL);
        }
        for (png_uint_32 y = 0; y < h; y++) sampler_row(&state->s, (int)y, state->image + (size_t)y * w * 4, 4);
    } else {
        state->row = malloc((size_t)w * 4);
        if (state->row == NULL) png_error(png, "out of memory");
        for (png_uint_32 y = 0; y < h; y++) {
            png_read_row(png, state->row, NULL);
            sampler_row(&state->s, (int)y, state->row, 4);
        }
    }
    sampler_flush(&state->s);
    png_destroy_read_struct(&png, &pinfo, NULL);
    return 0;
}

// MARK: - Entry point

static int thumb_make_file(FILE *file, const char *unreadable, int max_side, size_t memory_limit,
                           uint64_t max_pixels, int quality, unsigned char **out, size_t *out_len, thumb_info *info);

int thumb_make(const char *path, int max_side, size_t memory_limit, uint64_t max_pixels, int quality,
               unsigned char **out, size_t *out_len, thumb_info *info) {
    return thumb_make_file(fopen(path, "rb"), "cannot open file", max_side, memory_limit, max_pixels, quality, out,
                           out_len, info);
}

FILE *thumb_stream_at_start(int fd) {
    if (lseek(fd, 0, SEEK_SET) != 0) return NULL;
    int own = dup(fd);
    if (own < 0) return NULL;
    FILE *file = fdopen(own, "rb");
    if (file == NULL) close(own);
    return file;
}

int thumb_make_fd(int fd, int max_side, size_t memory_limit, uint64_t max_pixels, int quality, unsigned char **out,
                  size_t *out_len, thumb_info *info) {
    return thumb_make_file(thumb_stream_at_start(fd), "cannot read file", max_side, memory_limit, max_pixels, quality,
                           out, out_len, info);
}

/// Makes the thumbnail of what `file` holds, and closes it; a NULL `file` fails with `unreadable`.
static int thumb_make_file(FILE *file, const char *unreadable, int max_side, size_t memory_limit,
                           uint64_t max_pixels, int quality, unsigned char **out, size_t *out_len, thumb_info *info) {
    thumb_info scratch;
    if (info == NULL) info = &scratch;
    memset(info, 0, sizeof *info);
    if (file == NULL) {
        set_error(info, unreadable);
        return -1;
    }
    info->orientation = 1;
    if (max_side < 1) {
        fclose(file);
        set_error(info, "bad size");
        return -1;
    }
    unsigned char magic[8] = {0};
    size_t got = fread(magic, 1, sizeof magic, file);
    rewind(file);
    int result = -1;
    sampler s;
    memset(&s, 0, sizeof s);
    if (got >= 3 && magic[0] == 0xFF && magic[1] == 0xD8 && magic[2] == 0xFF) {
        decode_state *state = calloc(1, sizeof *state);
        if (state != NULL) {
            result = decode_jpeg(file, max_side, memory_limit, max_pixels, state, info);
            free(state->row);
            if (result == 0) s = state->s;
            else sampler_free(&state->s);
            free(state);
        }
    } else if (got == 8 && png_sig_cmp(magic, 0, 8) == 0) {
        png_state *state = calloc(1, sizeof *state);
        if (state != NULL) {
            result = decode_png(file, max_side, memory_limit, max_pixels, state, info);
            free(state->row);
            free(state->image);
            if (result == 0) s = state->s;
            else sampler_free(&state->s);
            free(state);
        }
    } else {
        set_error(info, "not a JPEG or PNG file");
    }
    fclose(file);
    if (result != 0) return -1;
    int w = s.out_w, h = s.out_h;
    unsigned char *pixels = s.out;
    unsigned char *turned = NULL;
    if (info->orientation != 1) {
        turned = orient(s.out, s.out_w, s.out_h, info->orientation, &w, &h);
        if (turned == NULL) {
            sampler_free(&s);
            set_error(info, "out of memory");
            return -1;
        }
        pixels = turned;
    }
    info->width = w;
    info->height = h;
    result = thumb_encode_jpeg(pixels, w, h, quality, out, out_len);
    if (result != 0) set_error(info, "cannot encode the thumbnail");
    free(turned);
    sampler_free(&s);
    return result;
}

unsigned char *thumb_fit_rgb(const unsigned char *pixels, int width, int height, int stride, int channels,
                             int max_side, int orientation, int *out_width, int *out_height) {
    if (pixels == NULL || width < 1 || height < 1 || max_side < 1 || (channels != 3 && channels != 4)) return NULL;
    sampler s;
    if (sampler_init(&s, width, height, max_side) != 0) {
        sampler_free(&s);
        return NULL;
    }
    for (int y = 0; y < height; y++) sampler_row(&s, y, pixels + (size_t)y * (size_t)stride, channels);
    sampler_flush(&s);
    unsigned char *turned = orient(s.out, s.out_w, s.out_h, orientation, out_width, out_height);
    sampler_free(&s);
    return turned;
}

void thumb_free(void *pointer) { free(pointer); }
