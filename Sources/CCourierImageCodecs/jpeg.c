// JPEG through libjpeg-turbo. libjpeg reports errors by calling error_exit, which must not return: ours
// longjmps back to the setjmp of the ccic_ function that called libjpeg (never further, never into Swift).
// libjpeg is loaded at run time (loader.h).
#ifdef __linux__
#include "CCourierImageCodecs.h"
#include "common.h"
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include "loader.h"

#if __has_include(<jpeglib.h>)
#include <jpeglib.h>
#include <jerror.h>

#define CCIC_JPEG_SYMBOLS(X) \
    X(ccic_jpeg, jpeg_std_error) X(ccic_jpeg, jpeg_CreateDecompress) \
    X(ccic_jpeg, jpeg_destroy_decompress) X(ccic_jpeg, jpeg_mem_src) X(ccic_jpeg, jpeg_save_markers) \
    X(ccic_jpeg, jpeg_read_header) X(ccic_jpeg, jpeg_calc_output_dimensions) \
    X(ccic_jpeg, jpeg_start_decompress) X(ccic_jpeg, jpeg_read_scanlines) \
    X(ccic_jpeg, jpeg_finish_decompress) X(ccic_jpeg, jpeg_CreateCompress) \
    X(ccic_jpeg, jpeg_destroy_compress) X(ccic_jpeg, jpeg_mem_dest) X(ccic_jpeg, jpeg_set_defaults) \
    X(ccic_jpeg, jpeg_set_quality) X(ccic_jpeg, jpeg_start_compress) X(ccic_jpeg, jpeg_write_scanlines) \
    X(ccic_jpeg, jpeg_finish_compress)
enum { CCIC_JPEG_SYMBOLS(CCIC_SLOT_INDEX) ccic_jpeg_count };
static const char *const ccic_jpeg_symbols[] = {CCIC_JPEG_SYMBOLS(CCIC_SLOT_NAME) NULL};
// libjpeg-turbo's libjpeg 6.2 ABI, the one jpeglib.h describes on Debian and Ubuntu.
static const char *const ccic_jpeg_sonames[] = {"libjpeg.so.62", "libjpeg.so", NULL};
static void *ccic_jpeg_slots[ccic_jpeg_count];
static ccic_library ccic_jpeg_library = {"libjpeg-turbo", ccic_jpeg_sonames, "libjpeg62-turbo", ccic_jpeg_symbols,
                                         ccic_jpeg_slots, 0, {0}};
#define jpeg_std_error CCIC_CALL(ccic_jpeg, jpeg_std_error)
#define jpeg_CreateDecompress CCIC_CALL(ccic_jpeg, jpeg_CreateDecompress)
#define jpeg_destroy_decompress CCIC_CALL(ccic_jpeg, jpeg_destroy_decompress)
#define jpeg_mem_src CCIC_CALL(ccic_jpeg, jpeg_mem_src)
#define jpeg_save_markers CCIC_CALL(ccic_jpeg, jpeg_save_markers)
#define jpeg_read_header CCIC_CALL(ccic_jpeg, jpeg_read_header)
#define jpeg_calc_output_dimensions CCIC_CALL(ccic_jpeg, jpeg_calc_output_dimensions)
#define jpeg_start_decompress CCIC_CALL(ccic_jpeg, jpeg_start_decompress)
#define jpeg_read_scanlines CCIC_CALL(ccic_jpeg, jpeg_read_scanlines)
#define jpeg_finish_decompress CCIC_CALL(ccic_jpeg, jpeg_finish_decompress)
#define jpeg_CreateCompress CCIC_CALL(ccic_jpeg, jpeg_CreateCompress)
#define jpeg_destroy_compress CCIC_CALL(ccic_jpeg, jpeg_destroy_compress)
#define jpeg_mem_dest CCIC_CALL(ccic_jpeg, jpeg_mem_dest)
#define jpeg_set_defaults CCIC_CALL(ccic_jpeg, jpeg_set_defaults)
#define jpeg_set_quality CCIC_CALL(ccic_jpeg, jpeg_set_quality)
#define jpeg_start_compress CCIC_CALL(ccic_jpeg, jpeg_start_compress)
#define jpeg_write_scanlines CCIC_CALL(ccic_jpeg, jpeg_write_scanlines)
#define jpeg_finish_compress CCIC_CALL(ccic_jpeg, jpeg_finish_compress)

typedef struct ccic_jpeg_error_manager {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    int premature_end;
    int too_many_scans;
} ccic_jpeg_error_manager;

// A progressive file of a few kilobytes can hold thousands of scans, each a pass over the whole image:
// minutes of CPU in jpeg_start_decompress (libjpeg-turbo's LJT-01-003). TurboJPEG recommends 500 as
// the limit; real files have about ten.
#define CCIC_JPEG_MAX_SCANS 500

struct ccic_jpeg_decoder {
    struct jpeg_decompress_struct cinfo;
    ccic_jpeg_error_manager error;
    int created;
    int cmyk;         // the output is CMYK (converted row by row into RGB)
    int adobe_cmyk;   // inverted CMYK (Adobe's APP14), as Photoshop writes
    uint8_t *row;     // the CMYK scratch row
    struct jpeg_progress_mgr progress;
};

// Called by libjpeg as it works: stops a file with more scans than any real one.
static void ccic_jpeg_progress(j_common_ptr cinfo) {
    if (!cinfo->is_decompressor) return;
    if (((j_decompress_ptr)cinfo)->input_scan_number > CCIC_JPEG_MAX_SCANS) {
        ccic_jpeg_error_manager *error = (ccic_jpeg_error_manager *)cinfo->err;
        error->too_many_scans = 1;
        longjmp(error->jump, 1);
    }
}

static void ccic_jpeg_error_exit(j_common_ptr cinfo) {
    ccic_jpeg_error_manager *error = (ccic_jpeg_error_manager *)cinfo->err;
    longjmp(error->jump, 1);
}

// Warnings are silent, except a premature end of data: libjpeg would go on with gray fill; we stop.
static void ccic_jpeg_emit_message(j_common_ptr cinfo, int level) {
    ccic_jpeg_error_manager *error = (ccic_jpeg_error_manager *)cinfo->err;
    if (level < 0) {
        cinfo->err->num_warnings++;
        if (cinfo->err->msg_code == JWRN_JPEG_EOF) {
            error->premature_end = 1;
            longjmp(error->jump, 1);
        }
    }
}

static void ccic_jpeg_output_message(j_common_ptr cinfo) { (void)cinfo; }

static void ccic_jpeg_install_errors(ccic_jpeg_error_manager *error) {
    jpeg_std_error(&error->pub);
    error->pub.error_exit = ccic_jpeg_error_exit;
    error->pub.emit_message = ccic_jpeg_emit_message;
    error->pub.output_message = ccic_jpeg_output_message;
    error->premature_end = 0;
    error->too_many_scans = 0;
}

static int ccic_jpeg_failure(j_common_ptr cinfo, ccic_jpeg_error_manager *error, char *message, size_t capacity) {
    if (error->premature_end) {
        return ccic_fail(CCIC_INVALID, message, capacity, "truncated JPEG (premature end of data)");
    }
    if (error->too_many_scans) {
        return ccic_fail(CCIC_INVALID, message, capacity, "JPEG with more than %d scans", CCIC_JPEG_MAX_SCANS);
    }
    // Over the working-memory limit (ccic_jpeg_set_memory_limit): libjpeg has no backing store to spill to.
    if (cinfo->err->msg_code == JERR_NO_BACKING_STORE || cinfo->err->msg_code == JERR_OUT_OF_MEMORY) {
        return ccic_fail(CCIC_TOO_LARGE, message, capacity, "JPEG needs more decoder memory than allowed");
    }
    char text[JMSG_LENGTH_MAX];
    text[0] = 0;
    (*cinfo->err->format_message)(cinfo, text);
    return ccic_fail(CCIC_INVALID, message, capacity, "invalid JPEG: %s", text);
}

ccic_jpeg_decoder *ccic_jpeg_decoder_create(void) {
    ccic_jpeg_decoder *decoder = calloc(1, sizeof(ccic_jpeg_decoder));
    return decoder;
}

void ccic_jpeg_decoder_destroy(ccic_jpeg_decoder *decoder) {
    if (decoder == NULL) return;
    if (decoder->created) jpeg_destroy_decompress(&decoder->cinfo);
    free(decoder->row);
    free(decoder);
}

int ccic_jpeg_read_header(ccic_jpeg_decoder *decoder, const uint8_t *data, size_t length, ccic_jpeg_info *info,
                          char *message, size_t capacity) {
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    memset(info, 0, sizeof(*info));
    if (length == 0 || decoder->created) return ccic_fail(CCIC_INVALID, message, capacity, "empty JPEG");
    int loaded = ccic_library_load(&ccic_jpeg_library, message, capacity);
    if (loaded != CCIC_OK) return loaded;
    cinfo->err = NULL;
    ccic_jpeg_install_errors(&decoder->error);
    cinfo->err = &decoder->error.pub;
    if (setjmp(decoder->error.jump)) {
        return ccic_jpeg_failure((j_common_ptr)cinfo, &decoder->error, message, capacity);
    }
    jpeg_create_decompress(cinfo);
    decoder->created = 1;
    decoder->progress.progress_monitor = ccic_jpeg_progress;
    cinfo->progress = &decoder->progress;
    jpeg_mem_src(cinfo, data, (unsigned long)length);
    jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(cinfo, TRUE);
    if (cinfo->image_width == 0 || cinfo->image_height == 0) {
        return ccic_fail(CCIC_INVALID, message, capacity, "JPEG declares an empty image");
    }
    switch (cinfo->jpeg_color_space) {
    case JCS_GRAYSCALE:
        cinfo->out_color_space = JCS_GRAYSCALE;
        break;
    case JCS_CMYK:
    case JCS_YCCK:
        cinfo->out_color_space = JCS_CMYK;
        decoder->cmyk = 1;
        decoder->adobe_cmyk = cinfo->saw_Adobe_marker;
        break;
    default:
        cinfo->out_color_space = JCS_EXT_RGB;
        break;
    }
    cinfo->scale_num = 8;
    cinfo->scale_denom = 8;
    jpeg_calc_output_dimensions(cinfo);
    info->width = (int)cinfo->image_width;
    info->height = (int)cinfo->image_height;
    info->output_width = (int)cinfo->output_width;
    info->output_height = (int)cinfo->output_height;
    info->channels = cinfo->out_color_space == JCS_GRAYSCALE ? 1 : 3;
    for (jpeg_saved_marker_ptr marker = cinfo->marker_list; marker != NULL; marker = marker->next) {
        if (marker->marker == JPEG_APP0 + 1 && marker->data_length > 6 && memcmp(marker->data, "Exif\0\0", 6) == 0) {
            info->exif = marker->data + 6;
            info->exif_length = marker->data_length - 6;
            break;
        }
    }
    return CCIC_OK;
}

int ccic_jpeg_set_scale(ccic_jpeg_decoder *decoder, int scale_num, ccic_jpeg_info *info, char *message,
                        size_t capacity) {
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    if (!decoder->created || scale_num < 1 || scale_num > 8) {
        return ccic_fail(CCIC_INVALID, message, capacity, "bad JPEG scale %d/8", scale_num);
    }
    if (setjmp(decoder->error.jump)) {
        return ccic_jpeg_failure((j_common_ptr)cinfo, &decoder->error, message, capacity);
    }
    cinfo->scale_num = (unsigned int)scale_num;
    cinfo->scale_denom = 8;
    jpeg_calc_output_dimensions(cinfo);
    info->output_width = (int)cinfo->output_width;
    info->output_height = (int)cinfo->output_height;
    return CCIC_OK;
}

void ccic_jpeg_set_memory_limit(ccic_jpeg_decoder *decoder, size_t bytes) {
    if (decoder->created) decoder->cinfo.mem->max_memory_to_use = (long)(bytes > (size_t)LONG_MAX ? (size_t)LONG_MAX : bytes);
}

int ccic_jpeg_decode(ccic_jpeg_decoder *decoder, uint8_t *pixels, size_t stride, char *message, size_t capacity) {
    struct jpeg_decompress_struct *cinfo = &decoder->cinfo;
    if (!decoder->created) return ccic_fail(CCIC_INVALID, message, capacity, "JPEG header not read");
    if (setjmp(decoder->error.jump)) {
        return ccic_jpeg_failure((j_common_ptr)cinfo, &decoder->error, message, capacity);
    }
    jpeg_start_decompress(cinfo);
    if (decoder->cmyk) {
        if (cinfo->output_components != 4) return ccic_fail(CCIC_INVALID, message, capacity, "unexpected CMYK layout");
        decoder->row = malloc((size_t)cinfo->output_width * 4);
        if (decoder->row == NULL) return ccic_fail(CCIC_NO_MEMORY, message, capacity, "out of memory");
    }
    while (cinfo->output_scanline < cinfo->output_height) {
        uint8_t *destination = pixels + (size_t)cinfo->output_scanline * stride;
        JSAMPROW row = decoder->cmyk ? decoder->row : destination;
        if (jpeg_read_scanlines(cinfo, &row, 1) != 1) {
            return ccic_fail(CCIC_INVALID, message, capacity, "truncated JPEG");
        }
        if (decoder->cmyk) {
            const uint8_t *source = decoder->row;
            for (JDIMENSION x = 0; x < cinfo->output_width; x++, source += 4, destination += 3) {
                // Adobe CMYK is stored inverted (255 = no ink); plain CMYK is not.
                unsigned c = source[0], m = source[1], y = source[2], k = source[3];
                if (!decoder->adobe_cmyk) { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k; }
                destination[0] = (uint8_t)((c * k + 127) / 255);
                destination[1] = (uint8_t)((m * k + 127) / 255);
                destination[2] = (uint8_t)((y * k + 127) / 255);
            }
        }
    }
    jpeg_finish_decompress(cinfo);
    return CCIC_OK;
}

typedef struct ccic_jpeg_encoder_state {
    struct jpeg_compress_struct cinfo;
    ccic_jpeg_error_manager error;
    int created;
    unsigned char *buffer;
    unsigned long size;
    uint8_t *row;
} ccic_jpeg_encoder_state;

static void ccic_jpeg_encoder_state_free(ccic_jpeg_encoder_state *state, int keep_buffer) {
    if (state->created) jpeg_destroy_compress(&state->cinfo);
    if (!keep_buffer) free(state->buffer);
    free(state->row);
    free(state);
}

int ccic_jpeg_encode(const uint8_t *pixels, int width, int height, int channels, size_t stride, int quality,
                     uint8_t **output, size_t *output_length, char *message, size_t capacity) {
    *output = NULL;
    *output_length = 0;
    int loaded = ccic_library_load(&ccic_jpeg_library, message, capacity);
    if (loaded != CCIC_OK) return loaded;
    if (width <= 0 || height <= 0 || width > JPEG_MAX_DIMENSION || height > JPEG_MAX_DIMENSION) {
        return ccic_fail(CCIC_INVALID, message, capacity, "JPEG cannot hold %dx%d", width, height);
    }
    if (channels != 1 && channels != 3 && channels != 4) {
        return ccic_fail(CCIC_INVALID, message, capacity, "unsupported channel count %d", channels);
    }
    // On the heap, so that nothing setjmp's caller changes lives in a register across the longjmp.
    ccic_jpeg_encoder_state *state = calloc(1, sizeof(ccic_jpeg_encoder_state));
    if (state == NULL) return ccic_fail(CCIC_NO_MEMORY, message, capacity, "out of memory");
    if (channels == 4) {
        state->row = malloc((size_t)width * 3);
        if (state->row == NULL) {
            ccic_jpeg_encoder_state_free(state, 0);
            return ccic_fail(CCIC_NO_MEMORY, message, capacity, "out of memory");
        }
    }
    ccic_jpeg_install_errors(&state->error);
    state->cinfo.err = &state->error.pub;
    if (setjmp(state->error.jump)) {
        char text[JMSG_LENGTH_MAX];
        text[0] = 0;
        (*state->cinfo.err->format_message)((j_common_ptr)&state->cinfo, text);
        // Not state->buffer: once libjpeg's memory destination has grown its buffer, the pointer we hold
        // was freed by it and the live one is private to it (leaked on this rare path, never freed twice).
        ccic_jpeg_encoder_state_free(state, 1);
        return ccic_fail(CCIC_INVALID, message, capacity, "JPEG encoding failed: %s", text);
    }
    jpeg_create_compress(&state->cinfo);
    state->created = 1;
    jpeg_mem_dest(&state->cinfo, &state->buffer, &state->size);
    state->cinfo.image_width = (JDIMENSION)width;
    state->cinfo.image_height = (JDIMENSION)height;
    state->cinfo.input_components = channels == 1 ? 1 : 3;
    state->cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_EXT_RGB;
    jpeg_set_defaults(&state->cinfo);
    jpeg_set_quality(&state->cinfo, quality < 1 ? 1 : (quality > 100 ? 100 : quality), TRUE);
    jpeg_start_compress(&state->cinfo, TRUE);
    while (state->cinfo.next_scanline < state->cinfo.image_height) {
        const uint8_t *source = pixels + (size_t)state->cinfo.next_scanline * stride;
        JSAMPROW row = (JSAMPROW)source;
        if (channels == 4) {
            // Composited on white: JPEG has no alpha.
            uint8_t *destination = state->row;
            for (int x = 0; x < width; x++, source += 4, destination += 3) {
                unsigned a = source[3], white = 255u * (255u - a);
                destination[0] = (uint8_t)((source[0] * a + white + 127) / 255);
                destination[1] = (uint8_t)((source[1] * a + white + 127) / 255);
                destination[2] = (uint8_t)((source[2] * a + white + 127) / 255);
            }
            row = state->row;
        }
        jpeg_write_scanlines(&state->cinfo, &row, 1);
    }
    jpeg_finish_compress(&state->cinfo);
    *output = state->buffer;
    *output_length = (size_t)state->size;
    ccic_jpeg_encoder_state_free(state, 1);
    return CCIC_OK;
}

#else // built without libjpeg's headers

struct ccic_jpeg_decoder {
    int unused;
};

ccic_jpeg_decoder *ccic_jpeg_decoder_create(void) { return calloc(1, sizeof(ccic_jpeg_decoder)); }

void ccic_jpeg_decoder_destroy(ccic_jpeg_decoder *decoder) { free(decoder); }

int ccic_jpeg_read_header(ccic_jpeg_decoder *decoder, const uint8_t *data, size_t length, ccic_jpeg_info *info,
                          char *message, size_t capacity) {
    (void)decoder, (void)data, (void)length;
    memset(info, 0, sizeof(*info));
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("JPEG", "libjpeg-dev"));
}

int ccic_jpeg_set_scale(ccic_jpeg_decoder *decoder, int scale_num, ccic_jpeg_info *info, char *message,
                        size_t capacity) {
    (void)decoder, (void)scale_num, (void)info;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("JPEG", "libjpeg-dev"));
}

void ccic_jpeg_set_memory_limit(ccic_jpeg_decoder *decoder, size_t bytes) { (void)decoder, (void)bytes; }

int ccic_jpeg_decode(ccic_jpeg_decoder *decoder, uint8_t *pixels, size_t stride, char *message, size_t capacity) {
    (void)decoder, (void)pixels, (void)stride;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("JPEG", "libjpeg-dev"));
}

int ccic_jpeg_encode(const uint8_t *pixels, int width, int height, int channels, size_t stride, int quality,
                     uint8_t **output, size_t *output_length, char *message, size_t capacity) {
    (void)pixels, (void)width, (void)height, (void)channels, (void)stride, (void)quality;
    *output = NULL;
    *output_length = 0;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("JPEG", "libjpeg-dev"));
}
#endif
#endif
