/// Area averaging (a box filter with exact fractional coverage), separable: each output pixel is the
/// average of the source area it covers, partly covered source pixels weighted by the covered fraction.
/// RGBA is averaged premultiplied, then un-premultiplied, so transparent pixels do not bleed their colour.
enum AreaResampler {
    /// One axis' weights: output `i` reads `counts[i]` source pixels from `starts[i]`, weighted by
    /// `weights[i * taps ..< i * taps + counts[i]]` (summing to 1).
    struct Axis {
        var starts: [Int]
        var counts: [Int]
        var weights: [Float]
        var taps: Int

        /// The weights mapping the source interval `[origin, origin + length)` (of a `size`-pixel axis) onto
        /// `output` pixels.
        init(origin: Double, length: Double, size: Int, output: Int) {
            let scale = length / Double(output)
            taps = Int(scale.rounded(.up)) + 2
            starts = [Int](repeating: 0, count: output)
            counts = [Int](repeating: 0, count: output)
            weights = [Float](repeating: 0, count: output * taps)
            for i in 0..<output {
                let a = max(0, min(Double(size), origin + Double(i) * scale))
                let b = max(a, min(Double(size), origin + Double(i + 1) * scale))
                var first = min(size - 1, Int(a.rounded(.down)))
                var last = max(first, min(size - 1, Int(b.rounded(.up)) - 1))
                var local = [Double]()
                var total = 0.0
                for j in first...last {
                    let covered = min(b, Double(j + 1)) - max(a, Double(j))
                    local.append(max(0, covered))
                    total += max(0, covered)
                }
                // Trim zero-coverage ends (rounding), keep at least one pixel.
                while local.count > 1, local.first == 0 { local.removeFirst(); first += 1 }
                while local.count > 1, local.last == 0 { local.removeLast(); last -= 1 }
                if total <= 0 { local = [1]; total = 1; last = first }
                let n = min(local.count, taps)
                starts[i] = first
                counts[i] = n
                for k in 0..<n { weights[i * taps + k] = Float(local[k] / total) }
            }
        }
    }

    /// Resamples the `region` (in source pixels, fractional) of `source` (`width` x `height`, `channels`
    /// bytes per pixel, alpha last when `alpha`) to `outWidth` x `outHeight`.
    ///
    /// Vertical pass first, one output row at a time: the source rows an output row covers are summed into
    /// one Float row (a contiguous loop the compiler vectorises), then that row is averaged horizontally.
    /// No intermediate image; every source byte in the region is read once per output row it touches.
    static func resample(
        _ source: UnsafeBufferPointer<UInt8>, width: Int, height: Int, channels: Int, alpha: Bool,
        region: (x: Double, y: Double, width: Double, height: Double), outWidth: Int, outHeight: Int
    ) -> [UInt8] {
        let horizontal = Axis(origin: region.x, length: region.width, size: width, output: outWidth)
        let vertical = Axis(origin: region.y, length: region.height, size: height, output: outHeight)
        // The source columns the horizontal pass reads.
        let firstColumn = horizontal.starts.first ?? 0
        let lastColumn = (horizontal.starts.last ?? 0) + (horizontal.counts.last ?? 1)
        let span = (lastColumn - firstColumn) * channels
        let count = outWidth * outHeight * channels
        var accumulator = [Float](repeating: 0, count: span)
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            accumulator.withUnsafeMutableBufferPointer { accumulatorBuffer in
                let src = source.baseAddress!, acc = accumulatorBuffer.baseAddress!, dst = buffer.baseAddress!
                let rowBytes = width * channels
                for y in 0..<outHeight {
                    // Vertical: acc = sum of weighted source rows (premultiplied when alpha).
                    let rowStart = vertical.starts[y], taps = vertical.counts[y]
                    for k in 0..<taps {
                        let w = vertical.weights[y * vertical.taps + k]
                        let row = src + (rowStart + k) * rowBytes + firstColumn * channels
                        if alpha {
                            var i = 0
                            while i < span {
                                let a = w * Float(row[i + 3])
                                let r = a * Float(row[i]), g = a * Float(row[i + 1]), b = a * Float(row[i + 2])
                                if k == 0 {
                                    acc[i] = r; acc[i + 1] = g; acc[i + 2] = b; acc[i + 3] = a
                                } else {
                                    acc[i] += r; acc[i + 1] += g; acc[i + 2] += b; acc[i + 3] += a
                                }
                                i += 4
                            }
                        } else if k == 0 {
                            for i in 0..<span { acc[i] = w * Float(row[i]) }
                        } else {
                            for i in 0..<span { acc[i] += w * Float(row[i]) }
                        }
                    }
                    // Horizontal: average acc's columns into the output row.
                    let out = dst + y * outWidth * channels
                    horizontal.weights.withUnsafeBufferPointer { weights in
                        let wts = weights.baseAddress!
                        for x in 0..<outWidth {
                            let w = wts + x * horizontal.taps, taps = horizontal.counts[x]
                            let p = acc + (horizontal.starts[x] - firstColumn) * channels
                            let o = out + x * channels
                            switch channels {
                            case 1:
                                var s0: Float = 0
                                for k in 0..<taps { s0 += w[k] * p[k] }
                                o[0] = toByte(s0)
                            case 3:
                                var s0: Float = 0, s1: Float = 0, s2: Float = 0
                                for k in 0..<taps {
                                    let wk = w[k], q = p + k * 3
                                    s0 += wk * q[0]; s1 += wk * q[1]; s2 += wk * q[2]
                                }
                                o[0] = toByte(s0); o[1] = toByte(s1); o[2] = toByte(s2)
                            default:
                                var s0: Float = 0, s1: Float = 0, s2: Float = 0, s3: Float = 0
                                for k in 0..<taps {
                                    let wk = w[k], q = p + k * 4
                                    s0 += wk * q[0]; s1 += wk * q[1]; s2 += wk * q[2]; s3 += wk * q[3]
                                }
                                if alpha {
                                    if s3 > 0 {
                                        let inverse = 1 / s3
                                        o[0] = toByte(s0 * inverse); o[1] = toByte(s1 * inverse); o[2] = toByte(s2 * inverse)
                                    } else {
                                        o[0] = 0; o[1] = 0; o[2] = 0
                                    }
                                } else {
                                    o[0] = toByte(s0); o[1] = toByte(s1); o[2] = toByte(s2)
                                }
                                o[3] = toByte(s3)
                            }
                        }
                    }
                }
            }
            initialized = count
        }
    }

    /// Rounds to the nearest byte, clamped to 0...255.
    @inline(__always)
    static func toByte(_ value: Float) -> UInt8 {
        UInt8(min(255, max(0, value + 0.5)))
    }
}
