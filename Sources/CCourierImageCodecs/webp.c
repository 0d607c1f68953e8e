// WebP through libwebp (no longjmp there: plain status codes), loaded at run time (loader.h).
#ifdef __linux__
#include "CCourierImageCodecs.h"
#include "common.h"
#include "loader.h"

#if __has_include(<webp/decode.h>)
#include <webp/decode.h>

// WebPGetFeatures is an inline wrapper of WebPGetFeaturesInternal: the latter is what the library exports.
#define CCIC_WEBP_SYMBOLS(X) X(ccic_webp, WebPGetFeaturesInternal) X(ccic_webp, WebPGetInfo) \
    X(ccic_webp, WebPDecodeRGBAInto) X(ccic_webp, WebPDecodeRGBInto)
enum { CCIC_WEBP_SYMBOLS(CCIC_SLOT_INDEX) ccic_webp_count };
static const char *const ccic_webp_symbols[] = {CCIC_WEBP_SYMBOLS(CCIC_SLOT_NAME) NULL};
static const char *const ccic_webp_sonames[] = {"libwebp.so.7", "libwebp.so", NULL};
static void *ccic_webp_slots[ccic_webp_count];
static ccic_library ccic_webp_library = {"libwebp", ccic_webp_sonames, "libwebp7", ccic_webp_symbols,
                                         ccic_webp_slots, 0, {0}};
#define WebPGetFeaturesInternal CCIC_CALL(ccic_webp, WebPGetFeaturesInternal)
#define WebPGetInfo CCIC_CALL(ccic_webp, WebPGetInfo)
#define WebPDecodeRGBAInto CCIC_CALL(ccic_webp, WebPDecodeRGBAInto)
#define WebPDecodeRGBInto CCIC_CALL(ccic_webp, WebPDecodeRGBInto)

int ccic_webp_read_header(const uint8_t *data, size_t length, int *width, int *height, int *has_alpha,
                          int *has_animation, char *message, size_t capacity) {
    int loaded = ccic_library_load(&ccic_webp_library, message, capacity);
    if (loaded != CCIC_OK) return loaded;
    WebPBitstreamFeatures features;
    VP8StatusCode status = WebPGetFeaturesInternal(data, length, &features, WEBP_DECODER_ABI_VERSION);
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
    int loaded = ccic_library_load(&ccic_webp_library, message, capacity);
    if (loaded != CCIC_OK) return loaded;
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

#else // built without libwebp's headers

int ccic_webp_read_header(const uint8_t *data, size_t length, int *width, int *height, int *has_alpha,
                          int *has_animation, char *message, size_t capacity) {
    (void)data, (void)length, (void)width, (void)height, (void)has_alpha, (void)has_animation;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("WebP", "libwebp-dev"));
}

int ccic_webp_decode(const uint8_t *data, size_t length, uint8_t *pixels, size_t stride, int channels, char *message,
                     size_t capacity) {
    (void)data, (void)length, (void)pixels, (void)stride, (void)channels;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("WebP", "libwebp-dev"));
}
#endif
#endif
