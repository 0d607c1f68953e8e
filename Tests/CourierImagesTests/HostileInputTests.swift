import Foundation
import Testing
@testable import CourierImages

@Suite("Hostile inputs")
struct HostileInputTests {
    @Test("Headers declaring 60000x60000 (WebP: 16383x16383) are refused before allocation", arguments: [
        "huge.png", "huge.jpg", "huge.gif", "huge.webp",
    ])
    func huge(name: String) throws {
        let data = try Fixtures.data(name)
        #expect(decodeError(data) == .imageTooLarge)
    }

    @Test("The pixel limit applies to every format", arguments: ["rgb.png", "photo.jpg", "lossless.webp", "transparent.gif"])
    func limit(name: String) throws {
        let data = try Fixtures.data(name)
        #expect(decodeError(data, options: ImageDecodingOptions(maximumPixelCount: 64 * 48 - 1)) == .imageTooLarge)
        #expect(decodeError(data, options: ImageDecodingOptions(maximumPixelCount: 64 * 48)) == nil)
    }

    @Test("Corrupt or truncated images are invalidImage", arguments: [
        "truncated.jpg", "badcrc.png", "truncated.png", "truncated.gif", "truncated.webp",
    ])
    func corrupt(name: String) throws {
        let data = try Fixtures.data(name)
        #expect(decodeError(data) == .invalidImage)
    }

    @Test("What is not an image is unsupportedImageFormat")
    func notImages() throws {
        for data in [try Fixtures.data("random.bin"), try Fixtures.data("page.html"), Data()] {
            #expect(decodeError(data) == .unsupportedImageFormat)
        }
    }

    @Test("Signatures followed by garbage are invalidImage")
    func signaturesOnly() {
        let signatures: [[UInt8]] = [
            [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], [0xFF, 0xD8, 0xFF], Array("RIFF\0\0\0\0WEBP".utf8), Array("GIF89a".utf8),
        ]
        for signature in signatures {
            for tail in [[], [UInt8](repeating: 0, count: 40), [UInt8](repeating: 0xFF, count: 40)] {
                #expect(decodeError(Data(signature + tail)) == .invalidImage, "\(signature) + \(tail.count)")
            }
        }
    }

    @Test("Every truncation and random byte flips never crash", arguments: [
        "rgb.png", "rgba.png", "photo.jpg", "progressive.jpg", "exif-6.jpg", "lossless.webp", "lossy-alpha.webp", "transparent.gif", "animated.gif",
    ])
    func mutations(name: String) throws {
        let data = try [UInt8](Fixtures.data(name))
        for length in 0..<data.count {
            if let code = decodeError(Data(data.prefix(length))) {
                #expect([NetworkError.Code.invalidImage, .unsupportedImageFormat, .imageTooLarge].contains(code))
            }
        }
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(data.count)
        func next() -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int(truncatingIfNeeded: seed >> 33)
        }
        for _ in 0..<300 {
            var mutated = data
            for _ in 0..<(1 + next() % 4) { mutated[8 + next() % (mutated.count - 8)] = UInt8(truncatingIfNeeded: next()) }
            let options = ImageDecodingOptions(maximumPixelCount: 1 << 20)
            if let code = decodeError(Data(mutated), options: options) {
                #expect([NetworkError.Code.invalidImage, .unsupportedImageFormat, .imageTooLarge].contains(code))
            }
        }
    }
}

@Suite("Hostile inputs: the JPEG decoder's own memory")
struct JPEGWorkingMemoryTests {
    @Test func aProgressiveJPEGIsHeldToTheMemoryItsPixelLimitAllows() throws {
        // 3000x3000 progressive 4:4:4: 54 MB of coefficients in libjpeg, even for a 1/8-scale thumbnail decode.
        let data = try Fixtures.data("big-progressive.jpg")
        let decoded = try ImageDecoders.decode(data, options: ImageDecodingOptions(thumbnail: Thumbnail(maxPixelSize: 256)))
        #expect(decoded.width == 375 && decoded.height == 375, "allowed by the default limit, at 1/8 scale")
        // 9 megapixels allowed: 36 MB of working memory, less than this file needs.
        let limited = ImageDecodingOptions(maximumPixelCount: 9_000_000, thumbnail: Thumbnail(maxPixelSize: 256))
        #expect(decodeError(data, options: limited) == .imageTooLarge)
    }

    @Test func aJPEGOfMoreScansThanAnyRealOneIsRefused() throws {
        // 600 copies of one scan (15 KB): libjpeg would pass over the image 600 times.
        let data = try Fixtures.data("many-scans.jpg")
        do throws(NetworkError) {
            _ = try ImageDecoders.decode(data)
            Issue.record("decoded")
        } catch {
            #expect(error.code == .invalidImage && error.message.contains("more than 500 scans"), "\(error)")
        }
    }
}
