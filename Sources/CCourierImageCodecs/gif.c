// GIF through giflib 5.2, from memory, first frame only: records are read until the first image (never
// DGifSlurp, which reads every frame of an animation into memory). giflib is loaded at run time (loader.h).
#ifdef __linux__
#include "CCourierImageCodecs.h"
#include "common.h"
#include <stdlib.h>
#include <string.h>
#include "loader.h"

#if __has_include(<gif_lib.h>)
#include <gif_lib.h>

#define CCIC_GIF_SYMBOLS(X) X(ccic_gif, DGifOpen) X(ccic_gif, DGifCloseFile) X(ccic_gif, GifErrorString) \
    X(ccic_gif, DGifGetRecordType) X(ccic_gif, DGifGetExtension) X(ccic_gif, DGifExtensionToGCB) \
    X(ccic_gif, DGifGetExtensionNext) X(ccic_gif, DGifGetImageDesc) X(ccic_gif, DGifGetLine)
enum { CCIC_GIF_SYMBOLS(CCIC_SLOT_INDEX) ccic_gif_count };
static const char *const ccic_gif_symbols[] = {CCIC_GIF_SYMBOLS(CCIC_SLOT_NAME) NULL};
static const char *const ccic_gif_sonames[] = {"libgif.so.7", "libgif.so", NULL};
static void *ccic_gif_slots[ccic_gif_count];
static ccic_library ccic_gif_library = {"giflib", ccic_gif_sonames, "libgif7", ccic_gif_symbols, ccic_gif_slots,
                                        0, {0}};
#define DGifOpen CCIC_CALL(ccic_gif, DGifOpen)
#define DGifCloseFile CCIC_CALL(ccic_gif, DGifCloseFile)
#define GifErrorString CCIC_CALL(ccic_gif, GifErrorString)
#define DGifGetRecordType CCIC_CALL(ccic_gif, DGifGetRecordType)
#define DGifGetExtension CCIC_CALL(ccic_gif, DGifGetExtension)
#define DGifExtensionToGCB CCIC_CALL(ccic_gif, DGifExtensionToGCB)
#define DGifGetExtensionNext CCIC_CALL(ccic_gif, DGifGetExtensionNext)
#define DGifGetImageDesc CCIC_CALL(ccic_gif, DGifGetImageDesc)
#define DGifGetLine CCIC_CALL(ccic_gif, DGifGetLine)

struct ccic_gif_decoder {
    GifFileType *gif;
    const uint8_t *data;
    size_t length;
    size_t position;
};

static int ccic_gif_read(GifFileType *gif, GifByteType *buffer, int count) {
    ccic_gif_decoder *decoder = (ccic_gif_decoder *)gif->UserData;
    if (count <= 0) return 0;
    size_t available = decoder->length - decoder->position;
    size_t n = (size_t)count < available ? (size_t)count : available;
    memcpy(buffer, decoder->data + decoder->position, n);
    decoder->position += n;
    return (int)n;
}

ccic_gif_decoder *ccic_gif_decoder_create(void) { return calloc(1, sizeof(ccic_gif_decoder)); }

void ccic_gif_decoder_destroy(ccic_gif_decoder *decoder) {
    if (decoder == NULL) return;
    if (decoder->gif != NULL) {
        int error = 0;
        DGifCloseFile(decoder->gif, &error);
    }
    free(decoder);
}

int ccic_gif_read_header(ccic_gif_decoder *decoder, const uint8_t *data, size_t length, int *width, int *height,
                         char *message, size_t capacity) {
    if (decoder->gif != NULL) return ccic_fail(CCIC_INVALID, message, capacity, "GIF header already read");
    int loaded = ccic_library_load(&ccic_gif_library, message, capacity);
    if (loaded != CCIC_OK) return loaded;
    decoder->data = data;
    decoder->length = length;
    decoder->position = 0;
    int error = 0;
    decoder->gif = DGifOpen(decoder, ccic_gif_read, &error);
    if (decoder->gif == NULL) {
        const char *text = GifErrorString(error);
        return ccic_fail(CCIC_INVALID, message, capacity, "invalid GIF: %s", text ? text : "unknown error");
    }
    if (decoder->gif->SWidth <= 0 || decoder->gif->SHeight <= 0) {
        return ccic_fail(CCIC_INVALID, message, capacity, "GIF declares %dx%d", decoder->gif->SWidth,
                         decoder->gif->SHeight);
    }
    *width = decoder->gif->SWidth;
    *height = decoder->gif->SHeight;
    return CCIC_OK;
}

static int ccic_gif_error(GifFileType *gif, char *message, size_t capacity) {
    const char *text = GifErrorString(gif->Error);
    return ccic_fail(CCIC_INVALID, message, capacity, "invalid GIF: %s", text ? text : "unknown error");
}

int ccic_gif_decode(ccic_gif_decoder *decoder, uint8_t *rgba, long maximum_pixel_count, char *message,
                    size_t capacity) {
    GifFileType *gif = decoder->gif;
    if (gif == NULL) return ccic_fail(CCIC_INVALID, message, capacity, "GIF header not read");
    const int screen_width = gif->SWidth, screen_height = gif->SHeight;
    memset(rgba, 0, (size_t)screen_width * (size_t)screen_height * 4);
    int transparent = NO_TRANSPARENT_COLOR;
    for (;;) {
        GifRecordType type;
        if (DGifGetRecordType(gif, &type) == GIF_ERROR) return ccic_gif_error(gif, message, capacity);
        if (type == TERMINATE_RECORD_TYPE) return ccic_fail(CCIC_INVALID, message, capacity, "GIF without an image");
        if (type == EXTENSION_RECORD_TYPE) {
            int code = 0;
            GifByteType *extension = NULL;
            if (DGifGetExtension(gif, &code, &extension) == GIF_ERROR) return ccic_gif_error(gif, message, capacity);
            if (code == GRAPHICS_EXT_FUNC_CODE && extension != NULL) {
                GraphicsControlBlock block;
                if (DGifExtensionToGCB(extension[0], extension + 1, &block) == GIF_OK) transparent = block.TransparentColor;
            }
            while (extension != NULL) {
                if (DGifGetExtensionNext(gif, &extension) == GIF_ERROR) return ccic_gif_error(gif, message, capacity);
            }
            continue;
        }
        if (type != IMAGE_DESC_RECORD_TYPE) continue;
        if (DGifGetImageDesc(gif) == GIF_ERROR) return ccic_gif_error(gif, message, capacity);
        const GifImageDesc *desc = &gif->Image;
        if (desc->Width <= 0 || desc->Height <= 0 || desc->Left < 0 || desc->Top < 0) {
            return ccic_fail(CCIC_INVALID, message, capacity, "GIF frame declares %dx%d", desc->Width, desc->Height);
        }
        if ((long)desc->Width * (long)desc->Height > maximum_pixel_count) {
            return ccic_fail(CCIC_TOO_LARGE, message, capacity, "GIF frame declares %dx%d", desc->Width, desc->Height);
        }
        const ColorMapObject *map = desc->ColorMap != NULL ? desc->ColorMap : gif->SColorMap;
        if (map == NULL || map->Colors == NULL) return ccic_fail(CCIC_INVALID, message, capacity, "GIF without colours");
        GifPixelType *line = malloc((size_t)desc->Width);
        if (line == NULL) return ccic_fail(CCIC_NO_MEMORY, message, capacity, "out of memory");
        static const int offsets[] = {0, 4, 2, 1}, steps[] = {8, 8, 4, 2};
        const int passes = desc->Interlace ? 4 : 1;
        for (int pass = 0; pass < passes; pass++) {
            const int start = desc->Interlace ? offsets[pass] : 0, step = desc->Interlace ? steps[pass] : 1;
            for (int row = start; row < desc->Height; row += step) {
                if (DGifGetLine(gif, line, desc->Width) == GIF_ERROR) {
                    free(line);
                    return ccic_gif_error(gif, message, capacity);
                }
                const int y = desc->Top + row;
                if (y >= screen_height || desc->Left >= screen_width) continue;
                uint8_t *destination = rgba + ((size_t)y * (size_t)screen_width + (size_t)desc->Left) * 4;
                for (int x = 0; x < desc->Width && desc->Left + x < screen_width; x++, destination += 4) {
                    const int index = line[x];
                    if (index == transparent || index >= map->ColorCount) continue;
                    const GifColorType color = map->Colors[index];
                    destination[0] = color.Red;
                    destination[1] = color.Green;
                    destination[2] = color.Blue;
                    destination[3] = 255;
                }
            }
        }
        free(line);
        return CCIC_OK;
    }
}

#else // built without giflib's headers

struct ccic_gif_decoder {
    int unused;
};

ccic_gif_decoder *ccic_gif_decoder_create(void) { return calloc(1, sizeof(ccic_gif_decoder)); }

void ccic_gif_decoder_destroy(ccic_gif_decoder *decoder) { free(decoder); }

int ccic_gif_read_header(ccic_gif_decoder *decoder, const uint8_t *data, size_t length, int *width, int *height,
                         char *message, size_t capacity) {
    (void)decoder, (void)data, (void)length, (void)width, (void)height;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("GIF", "libgif-dev"));
}

int ccic_gif_decode(ccic_gif_decoder *decoder, uint8_t *rgba, long maximum_pixel_count, char *message,
                    size_t capacity) {
    (void)decoder, (void)rgba, (void)maximum_pixel_count;
    return ccic_fail(CCIC_UNAVAILABLE, message, capacity, CCIC_NOT_BUILT("GIF", "libgif-dev"));
}
#endif
#endif
