import Foundation
import Testing
@testable import CourierImages

@Suite("Encoding")
struct EncodingTests {
    @Test("PNG round trip is exact for every pixel format", arguments: ["rgb.png", "rgba.png", "gray.png"])
    func pngRoundTrip(name: String) throws {
        let image = try ImageDecoders.decode(Fixtures.data(name))
        let data = try image.encoded(as: .png)
        #expect(ImageFormat(sniffing: data) == .png)
        let decoded = try ImageDecoders.decode(data)
        #expect(decoded.pixelFormat == image.pixelFormat && decoded.pixels == image.pixels)
    }

    @Test("JPEG round trip is close")
    func jpegRoundTrip() throws {
        let image = Fixtures.pattern(120, 80)
        let data = try image.encoded(as: .jpeg(quality: 92))
        #expect(ImageFormat(sniffing: data) == .jpeg)
        let decoded = try ImageDecoders.decode(data)
        #expect(decoded.width == 120 && decoded.height == 80 && decoded.pixelFormat == .rgb8)
        let error = zip(decoded.pixels, image.pixels).map { abs(Int($0) - Int($1)) }.reduce(0, +)
        // Hard colour edges lose some chroma to 4:2:0 subsampling.
        #expect(Double(error) / Double(image.pixels.count) < 6)
        let gray = try ImageDecoders.decode(Fixtures.solid(16, 16, [90]).encoded(as: .jpeg()))
        #expect(gray.pixelFormat == .gray8 && gray.pixels.allSatisfy { abs(Int($0) - 90) <= 1 })
        // Quality changes the size.
        #expect(try image.encoded(as: .jpeg(quality: 20)).count < data.count)
    }

    @Test("JPEG of an RGBA image is composited on white")
    func jpegAlpha() throws {
        let clear = Fixtures.solid(16, 16, [0, 0, 0, 0])
        let decoded = try ImageDecoders.decode(clear.encoded(as: .jpeg(quality: 95)))
        #expect(decoded.pixels.allSatisfy { $0 >= 253 })
        let half = Fixtures.solid(16, 16, [0, 0, 0, 128])
        let grey = try ImageDecoders.decode(half.encoded(as: .jpeg(quality: 95)))
        #expect(grey.pixels.allSatisfy { abs(Int($0) - 127) <= 2 })
    }

    @Test("Descriptions and formats")
    func descriptions() {
        #expect(ImageEncoding.jpeg().description == "jpeg(quality: 85)")
        #expect(ImageEncoding.jpeg(quality: 300) == .jpeg(quality: 100))
        #expect(ImageEncoding.png.format == .png)
    }
}
