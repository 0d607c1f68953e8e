// CourierImages: images fetched through Courier's queue, cache and coalescing, decoded, thumbnailed and
// kept in a decoded-image cache, on Linux (libpng, libjpeg-turbo, libwebp, giflib) and Apple platforms
// (ImageIO). Importing it imports Courier.
@_exported public import Courier
