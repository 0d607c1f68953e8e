// PNG through libpng's simplified API (which catches libpng's own longjmps internally and reports failures
// in image.message), loaded at run time (loader.h).
#ifdef __linux__
#include "CCourierImageCodecs.h"
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include "loader.h"

#if __has_include(<png.h>)
#include <png.h>

#define CCIC_PNG_SYMBOLS(X) X(ccic_png, png_image_begin_read_from_memory) X(ccic_png, png_image_finish_read) \
    X(ccic_png, png_image_free) X(ccic_png, png_image_write_to_memory)
enum { CCIC_PNG_SYMBOLS(CCIC_SLOT_INDEX) ccic_png_count };
static const char *const ccic_png_symbols[] = {CCIC_PNG_SYMBOLS(CCIC_SLOT_NAME) NULL};
static const char *const ccic_png_sonames[] = {"libpng16.so.16", "libpng16.so", NULL};
static void *ccic_png_slots[ccic_png_count];
static ccic_library ccic_png_library = {"libpng", ccic_png_sonames, "libpng16-16", ccic_png_symbols, ccic_png_slots,
                                        0, {0}};
#define png_image_begin_read_from_memory CCIC_CALL(ccic_png, png_image_begin_read_from_memory)
#define png_image_finish_read CCIC_CALL(ccic_png, png_image_finish_read)
#define png_image_free CCIC_CALL(ccic_png, png_image_free)
#define png_image_write_to_memory CCIC_CALL(ccic_png, png_image_write_to_memory)

struct ccic_png_decoder {
    png_image image;
    int begun;
};

ccic_png_decoder *ccic_png_decoder_create(void) { return calloc(1, sizeof(ccic_png_decoder)); }

void ccic_png_decoder_destroy(ccic_png_decoder *decoder) {
    if (decoder == NULL) return;
    if (decoder->begun) png_image_free(&decoder->image);
    free(decoder);
}

int ccic_png_read_header(ccic_png_decoder *decoder, const uint8_t *data, size_t length, int *width, int *height,
                         int *channels, char *message, size_t capacity) {
    int loaded = ccic_library_load(&ccic_png_library, message, capacity);
    if (loaded != CCIC_OK) return loaded;
    png_image *image = &decoder->image;
    memset(image, 0, sizeof(*image));
    image->version = PNG_IMAGE_VERSION;
    decoder->begun = 1;
    if (!png_image_begin_read_from_memory(image, data, length)) {
        return ccic_fail(CCIC_INVALID, message, capacity, "invalid PNG: %s", image->message);
    }
    if (image->width == 0 || image->height == 0 || image->width > 0x7fffffff || image->height > 0x7fffffff) {
        return ccic_fail(CCIC_INVALID, message, capacity, "PNG declares %ux%u", image->width, image->height);
    }
    // 16-bit samples are sRGB-encoded like 8-bit ones (libpng would otherwise assume linear light and
    // re-encode them when reducing to 8 bits, unlike every other decoder).
    image->flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
    *width = (int)image->width;
    *height = (int)image->height;
    if (image->format & PNG_FORMAT_FLAG_ALPHA) {
        image->format = PNG_FORMAT_RGBA;
        *channels = 4;
    } else if (image->format & PNG_FORMAT_FLAG_COLOR) {
        image->format = PNG_FORMAT_RGB;
        *channels = 3;
    } else {
        image->format = PNG_FORMAT_GRAY;
        *channels = 1;
    }
    return CCIC_OK;
}

int ccic_png_decode(ccic_png_decoder *decoder, uint8_t *pixels, size_t stride, char *message, size_t capacity) {
    png_image *image = &decoder->image;
    if (stride > 0x7fffffff) return ccic_fail(CCIC_TOO_LARGE, message, capacity, "PNG rows too long");
    if (!png_image_finish_read(image, NULL, pixels, (png_int_32)stride, NULL)) {
        return ccic_fail(CCIC_INVALID, message, capacity, "invalid PNG: %s", image->message);
    }
    return CCIC_OK;
}

int ccic_png_encode(const uint8_t *pixels, int width, int height, int channels, size_t stride, uint8_t **output,
                    size_t *output_length, char *message, size_t capacity) {
    *output = NULL;
    *output_length = 0;
    int loaded = ccic_library_load(&ccic_png_library, message, capacity);
    if (loaded != CCIC_OK) return loaded;
    if (width <= 0 || height <= 0 || stride > 0x7fffffff) {
        return ccic_fail(CCIC_INVALID, message, capacity, "PNG cannot hold %dx%d", width, height);
    }
    png_image image;
    memset(&image, 0, sizeof(image));
    image.version = PNG_IMAGE_VERSION;
    image.width = (png_uint_32)width;
    image.height = (png_uint_32)height;
    switch (channels) {
    case 1: image.format = PNG_FORMAT_GRAY; break;
    case 3: image.format = PNG_FORMAT_RGB; break;
    case 4: image.format = PNG_FORMAT_RGBA; break;
    default: return ccic_fail(CCIC_INVALID, message, capacity, "unsupported channel count %d", channels);
    }
    png_alloc_size_t size = 0;
    if (!png_image_write_to_memory(&image, NULL, &size, 0, pixels, (png_int_32)stride, NULL)) {
        int code = ccic_fail(CCIC_INVALID, message, capacity, "PNG encoding failed: %s", image.message);
        png_image_free(&image);
        return code;
    }
    uint8_t *buffer = malloc(size);
    if (buffer == NULL) return ccic_fail(CCIC_NO_MEMORY, message, capacity, "out of memory");
    if (!png_image_write_to_memory(&image, buffer, &size, 0, pixels, (png_int_32)stride, NULL)) {
        int code = ccic_fail(CCIC_INVALID, message, capacity, "PNG encoding failed: %s", image.message);
        png_image_free(&image);
        free(buffer);
        return code;
    }
    *output = buffer;
    *output_length = (size_t)size;
    return CCIC_OK;
}

#else // built without libpng's headers

struct ccic_png_decoder {
    int unused;
};

ccic_png_decoder *ccic_png_decoder_create(void) { return calloc(1, sizeof(ccic_png_decoder)); }

void ccic_png_decoder_destroy(ccic_png_decoder *decoder) { free(decoder); }

int ccic_png_read_header(ccic_png_decoder *decoder, const uint8_t *data, size_t length, int *width, int *height,
                         int *channels, char *message, size_t capacity) {
    (void)decoder, (void)data, (void)length, (void)width, (void)height, (void)channels;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("PNG", "libpng-dev"));
}

int ccic_png_decode(ccic_png_decoder *decoder, uint8_t *pixels, size_t stride, char *message, size_t capacity) {
    (void)decoder, (void)pixels, (void)stride;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("PNG", "libpng-dev"));
}

int ccic_png_encode(const uint8_t *pixels, int width, int height, int channels, size_t stride, uint8_t **output,
                    size_t *output_length, char *message, size_t capacity) {
    (void)pixels, (void)width, (void)height, (void)channels, (void)stride;
    *output = NULL;
    *output_length = 0;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("PNG", "libpng-dev"));
}
#endif
#endif
