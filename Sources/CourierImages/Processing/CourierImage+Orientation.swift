extension CourierImage {
    /// The image as it should be shown when stored with `orientation`: width and height swap for 5 to 8.
    func oriented(_ orientation: ExifOrientation) -> CourierImage {
        guard orientation != .up else { return self }
        let w = width, h = height, bpp = pixelFormat.bytesPerPixel
        let outWidth = orientation.swapsDimensions ? h : w, outHeight = orientation.swapsDimensions ? w : h
        // For each output pixel (x, y), the source pixel: origin + x * dx + y * dy (in pixels).
        let origin: (Int, Int), dx: (Int, Int), dy: (Int, Int)
        switch orientation {
        case .up: (origin, dx, dy) = ((0, 0), (1, 0), (0, 1))
        case .upMirrored: (origin, dx, dy) = ((w - 1, 0), (-1, 0), (0, 1))
        case .down: (origin, dx, dy) = ((w - 1, h - 1), (-1, 0), (0, -1))
        case .downMirrored: (origin, dx, dy) = ((0, h - 1), (1, 0), (0, -1))
        case .leftMirrored: (origin, dx, dy) = ((0, 0), (0, 1), (1, 0))  // out(x, y) = in(y, x)
        case .right: (origin, dx, dy) = ((0, h - 1), (0, -1), (1, 0))  // out(x, y) = in(y, h-1-x)
        case .rightMirrored: (origin, dx, dy) = ((w - 1, h - 1), (0, -1), (-1, 0))  // in(w-1-y, h-1-x)
        case .left: (origin, dx, dy) = ((w - 1, 0), (0, 1), (-1, 0))  // out(x, y) = in(w-1-y, x)
        }
        let stepX = (dx.0 + dx.1 * w) * bpp, stepY = (dy.0 + dy.1 * w) * bpp
        let start = (origin.0 + origin.1 * w) * bpp
        let count = pixels.count
        let output = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            pixels.withUnsafeBufferPointer { source in
                let src = source.baseAddress!, dst = buffer.baseAddress!
                var out = 0
                for y in 0..<outHeight {
                    var offset = start + y * stepY
                    for _ in 0..<outWidth {
                        for c in 0..<bpp { dst[out + c] = src[offset + c] }
                        out += bpp
                        offset += stepX
                    }
                }
            }
            initialized = count
        }
        return CourierImage(unchecked: outWidth, outHeight, pixelFormat, output, sourceFormat)
    }
}
