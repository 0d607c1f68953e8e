extension CourierImage {
    /// The image in another pixel format.
    ///
    /// - To `.rgba8`: opaque alpha added, gray replicated (lossless).
    /// - RGBA to `.rgb8` (or `.gray8`): composited on white, as JPEG encoding does.
    /// - To `.gray8`: luma `(299 R + 587 G + 114 B) / 1000`, as Pillow's `convert("L")`.
    public func converted(to format: PixelFormat) -> CourierImage {
        guard format != pixelFormat else { return self }
        let count = width * height
        let from = pixelFormat.bytesPerPixel, to = format.bytesPerPixel
        let output = [UInt8](unsafeUninitializedCapacity: count * to) { buffer, initialized in
            pixels.withUnsafeBufferPointer { source in
                let src = source.baseAddress!, dst = buffer.baseAddress!
                for i in 0..<count {
                    let p = src + i * from
                    var r: UInt32, g: UInt32, b: UInt32, a: UInt32 = 255
                    if from == 1 {
                        (r, g, b) = (UInt32(p[0]), UInt32(p[0]), UInt32(p[0]))
                    } else {
                        (r, g, b) = (UInt32(p[0]), UInt32(p[1]), UInt32(p[2]))
                    }
                    if from == 4 { a = UInt32(p[3]) }
                    let q = dst + i * to
                    if to == 4 {
                        q[0] = UInt8(r); q[1] = UInt8(g); q[2] = UInt8(b); q[3] = UInt8(a)
                        continue
                    }
                    if a != 255 {
                        let white = 255 * (255 - a)
                        r = (r * a + white + 127) / 255
                        g = (g * a + white + 127) / 255
                        b = (b * a + white + 127) / 255
                    }
                    if to == 3 {
                        q[0] = UInt8(r); q[1] = UInt8(g); q[2] = UInt8(b)
                    } else {
                        q[0] = UInt8((r * 299 + g * 587 + b * 114 + 500) / 1000)
                    }
                }
            }
            initialized = count * to
        }
        return CourierImage(unchecked: width, height, format, output, sourceFormat)
    }
}
