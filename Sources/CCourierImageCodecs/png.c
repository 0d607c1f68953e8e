// PNG through libpng's simplified API (which catches libpng's own longjmps internally and reports failures
// in image.message).
#ifdef __linux__
#include "CCourierImageCodecs.h"
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include <png.h>

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
#endif
