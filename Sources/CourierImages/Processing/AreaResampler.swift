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
    static func resample(
        _ source: UnsafeBufferPointer<UInt8>, width: Int, height: Int, channels: Int, alpha: Bool,
        region: (x: Double, y: Double, width: Double, height: Double), outWidth: Int, outHeight: Int
    ) -> [UInt8] {
        let horizontal = Axis(origin: region.x, length: region.width, size: width, output: outWidth)
        let vertical = Axis(origin: region.y, length: region.height, size: height, output: outHeight)
        // The source rows the vertical pass reads.
        let firstRow = vertical.starts.first ?? 0
        let lastRow = (vertical.starts.last ?? 0) + (vertical.counts.last ?? 1)
        let rows = lastRow - firstRow
        let rowFloats = outWidth * channels
        var intermediate = [Float](repeating: 0, count: rows * rowFloats)
        let src = source.baseAddress!
        // Horizontal pass: source rows -> outWidth columns, Float, premultiplied when alpha.
        intermediate.withUnsafeMutableBufferPointer { tmp in
            horizontal.weights.withUnsafeBufferPointer { weights in
                let t = tmp.baseAddress!, wts = weights.baseAddress!, taps = horizontal.taps
                for row in 0..<rows {
                    let line = src + (firstRow + row) * width * channels
                    let out = t + row * rowFloats
                    for x in 0..<outWidth {
                        let start = horizontal.starts[x], count = horizontal.counts[x]
                        let w = wts + x * taps
                        var p = line + start * channels
                        switch (channels, alpha) {
                        case (1, _):
                            var s0: Float = 0
                            for k in 0..<count { s0 += w[k] * Float(p[0]); p += 1 }
                            out[x] = s0
                        case (3, _):
                            var s0: Float = 0, s1: Float = 0, s2: Float = 0
                            for k in 0..<count {
                                let wk = w[k]
                                s0 += wk * Float(p[0]); s1 += wk * Float(p[1]); s2 += wk * Float(p[2])
                                p += 3
                            }
                            out[x * 3] = s0; out[x * 3 + 1] = s1; out[x * 3 + 2] = s2
                        default:
                            var s0: Float = 0, s1: Float = 0, s2: Float = 0, s3: Float = 0
                            for k in 0..<count {
                                let a = Float(p[3]), wk = w[k], wa = wk * a
                                s0 += wa * Float(p[0]); s1 += wa * Float(p[1]); s2 += wa * Float(p[2]); s3 += wa
                                p += 4
                            }
                            out[x * 4] = s0; out[x * 4 + 1] = s1; out[x * 4 + 2] = s2; out[x * 4 + 3] = s3
                        }
                    }
                }
            }
        }
        // Vertical pass: rows of the intermediate -> output rows, then back to bytes.
        let count = outWidth * outHeight * channels
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var accumulator = [Float](repeating: 0, count: rowFloats)
            intermediate.withUnsafeBufferPointer { tmp in
                accumulator.withUnsafeMutableBufferPointer { acc in
                    let t = tmp.baseAddress!, sum = acc.baseAddress!, dst = buffer.baseAddress!
                    for y in 0..<outHeight {
                        let start = vertical.starts[y] - firstRow, taps = vertical.counts[y]
                        let w0 = vertical.weights[y * vertical.taps]
                        var row = t + start * rowFloats
                        for i in 0..<rowFloats { sum[i] = w0 * row[i] }
                        if taps > 1 {
                            for k in 1..<taps {
                                let wk = vertical.weights[y * vertical.taps + k]
                                row += rowFloats
                                for i in 0..<rowFloats { sum[i] += wk * row[i] }
                            }
                        }
                        let out = dst + y * rowFloats
                        if alpha {
                            for x in 0..<outWidth {
                                let a = sum[x * 4 + 3]
                                if a > 0 {
                                    let inverse = 1 / a
                                    out[x * 4] = toByte(sum[x * 4] * inverse)
                                    out[x * 4 + 1] = toByte(sum[x * 4 + 1] * inverse)
                                    out[x * 4 + 2] = toByte(sum[x * 4 + 2] * inverse)
                                } else {
                                    out[x * 4] = 0; out[x * 4 + 1] = 0; out[x * 4 + 2] = 0
                                }
                                out[x * 4 + 3] = toByte(a)
                            }
                        } else {
                            for i in 0..<rowFloats { out[i] = toByte(sum[i]) }
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
