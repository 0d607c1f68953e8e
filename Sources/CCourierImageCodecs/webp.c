// WebP through libwebp (no longjmp there: plain status codes).
#ifdef __linux__
#include "CCourierImageCodecs.h"
#include "common.h"
#include <webp/decode.h>

int ccic_webp_read_header(const uint8_t *data, size_t length, int *width, int *height, int *has_alpha,
                          int *has_animation, char *message, size_t capacity) {
    WebPBitstreamFeatures features;
    VP8StatusCode status = WebPGetFeatures(data, length, &features);
    if (status != VP8_STATUS_OK) {
        return ccic_fail(CCIC_INVALID, message, capacity, "invalid WebP (status %d)", (int)status);
    }
    if (features.width <= 0 || features.height <= 0) {
        return ccic_fail(CCIC_INVALID, message, capacity, "WebP declares %dx%d", features.width, features.height);
    }
    *width = features.width;
    *height = features.height;
    *has_alpha = features.has_alpha;
    *has_animation = features.has_animation;
    return CCIC_OK;
}

int ccic_webp_decode(const uint8_t *data, size_t length, uint8_t *pixels, size_t stride, int channels, char *message,
                     size_t capacity) {
    int width = 0, height = 0;
    if (!WebPGetInfo(data, length, &width, &height) || height <= 0 || stride > 0x7fffffff) {
        return ccic_fail(CCIC_INVALID, message, capacity, "invalid WebP");
    }
    size_t size = stride * (size_t)height;
    uint8_t *result = channels == 4 ? WebPDecodeRGBAInto(data, length, pixels, size, (int)stride)
                                    : WebPDecodeRGBInto(data, length, pixels, size, (int)stride);
    if (result == NULL) return ccic_fail(CCIC_INVALID, message, capacity, "invalid or truncated WebP");
    return CCIC_OK;
}
#endif
