// The C side of CourierImages' Linux codecs. Every function returns one of the CCIC_ codes and, on failure,
// writes a NUL-terminated message into `message` (at most `capacity` bytes). Nothing here exits the
// process or longjmps out of a function: libjpeg's errors are caught with setjmp inside the function that
// called libjpeg, so a Swift frame is never jumped over.
#ifndef CCOURIER_IMAGE_CODECS_H
#define CCOURIER_IMAGE_CODECS_H

#include <stddef.h>
#include <stdint.h>

#define CCIC_OK 0
#define CCIC_INVALID 1
#define CCIC_TOO_LARGE 2
#define CCIC_UNSUPPORTED 3
#define CCIC_NO_MEMORY 4
// The codec's library is not installed, or its headers were missing when Courier was built; the message
// names the package to install.
#define CCIC_UNAVAILABLE 5

// MARK: JPEG (libjpeg-turbo)

typedef struct ccic_jpeg_decoder ccic_jpeg_decoder;

typedef struct ccic_jpeg_info {
    int width;           // as the file declares it
    int height;
    int output_width;    // after DCT scaling
    int output_height;
    int channels;        // of the output: 1 (gray) or 3 (RGB; CMYK files are converted)
    const uint8_t *exif; // the APP1 Exif payload after "Exif\0\0" (a TIFF header), or NULL; valid until
                         // ccic_jpeg_decode (which frees libjpeg's saved markers)
    size_t exif_length;
} ccic_jpeg_info;

ccic_jpeg_decoder *ccic_jpeg_decoder_create(void);
void ccic_jpeg_decoder_destroy(ccic_jpeg_decoder *decoder);
// Reads the headers of `data` (which must stay valid until destroy); the output size is the full size.
int ccic_jpeg_read_header(ccic_jpeg_decoder *decoder, const uint8_t *data, size_t length, ccic_jpeg_info *info,
                          char *message, size_t capacity);
// Decodes at the DCT scale M/8 (M = 1...8) instead; updates info's output size.
int ccic_jpeg_set_scale(ccic_jpeg_decoder *decoder, int scale_num, ccic_jpeg_info *info, char *message,
                        size_t capacity);
// Caps libjpeg's working memory (the whole-image coefficient arrays a progressive file needs, which DCT
// scaling does not shrink); past it, decoding fails with CCIC_TOO_LARGE.
void ccic_jpeg_set_memory_limit(ccic_jpeg_decoder *decoder, size_t bytes);
// Decodes into `pixels` (output_height rows of `stride` >= output_width * channels bytes). A truncated file
// (libjpeg's "premature end") is CCIC_INVALID.
int ccic_jpeg_decode(ccic_jpeg_decoder *decoder, uint8_t *pixels, size_t stride, char *message, size_t capacity);
// Encodes 1, 3 or 4 (RGBA, composited on white) channel pixels; *output is malloc'ed (free with ccic_free).
int ccic_jpeg_encode(const uint8_t *pixels, int width, int height, int channels, size_t stride, int quality,
                     uint8_t **output, size_t *output_length, char *message, size_t capacity);

// MARK: PNG (libpng's simplified API)

typedef struct ccic_png_decoder ccic_png_decoder;

ccic_png_decoder *ccic_png_decoder_create(void);
void ccic_png_decoder_destroy(ccic_png_decoder *decoder);
// Reads the header; *channels is 4 when the file has alpha (or a tRNS chunk), else 3 for colour, 1 for gray.
int ccic_png_read_header(ccic_png_decoder *decoder, const uint8_t *data, size_t length, int *width, int *height,
                         int *channels, char *message, size_t capacity);
int ccic_png_decode(ccic_png_decoder *decoder, uint8_t *pixels, size_t stride, char *message, size_t capacity);
int ccic_png_encode(const uint8_t *pixels, int width, int height, int channels, size_t stride, uint8_t **output,
                    size_t *output_length, char *message, size_t capacity);

// MARK: WebP (libwebp)

int ccic_webp_read_header(const uint8_t *data, size_t length, int *width, int *height, int *has_alpha,
                          int *has_animation, char *message, size_t capacity);
// `channels` 4 (RGBA) or 3 (RGB).
int ccic_webp_decode(const uint8_t *data, size_t length, uint8_t *pixels, size_t stride, int channels, char *message,
                     size_t capacity);

// MARK: GIF (giflib 5.2)

typedef struct ccic_gif_decoder ccic_gif_decoder;

ccic_gif_decoder *ccic_gif_decoder_create(void);
void ccic_gif_decoder_destroy(ccic_gif_decoder *decoder);
// Reads the logical screen descriptor; `data` must stay valid until destroy.
int ccic_gif_read_header(ccic_gif_decoder *decoder, const uint8_t *data, size_t length, int *width, int *height,
                         char *message, size_t capacity);
// Decodes the first frame, composited on the logical screen (width * height * 4 RGBA bytes, zero = transparent,
// already cleared by this function), the transparent index as alpha 0. A frame over `maximum_pixel_count`
// pixels is CCIC_TOO_LARGE.
int ccic_gif_decode(ccic_gif_decoder *decoder, uint8_t *rgba, long maximum_pixel_count, char *message,
                    size_t capacity);

void ccic_free(void *pointer);

#endif
