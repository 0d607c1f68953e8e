import Foundation
import Testing
@testable import CourierImages

@Suite("EXIF orientation")
struct OrientationTests {
    @Test("JPEGs with orientation 1...8 come out as Pillow's exif_transpose", arguments: 1...8)
    func fixtures(orientation: Int) throws {
        let result = try Fixtures.compare("exif-\(orientation).jpg")
        #expect(result.max <= 8 && result.mean <= 1, "orientation \(orientation): max \(result.max), mean \(result.mean)")
        let expected = orientation >= 5 ? (48, 64) : (64, 48)
        #expect(result.image.width == expected.0 && result.image.height == expected.1)
    }

    @Test("appliesOrientation: false keeps the stored pixels")
    func notApplied() throws {
        let image = try ImageDecoders.decode(Fixtures.data("exif-6.jpg"), options: ImageDecodingOptions(appliesOrientation: false))
        #expect(image.width == 64 && image.height == 48)
    }

    /// A TIFF header with one IFD entry: tag, type, value.
    func tiff(littleEndian: Bool, entries: [(tag: UInt16, type: UInt16, value: UInt32)], ifdOffset: UInt32 = 8) -> [UInt8] {
        func u16(_ v: UInt16) -> [UInt8] { littleEndian ? [UInt8(v & 0xFF), UInt8(v >> 8)] : [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func u32(_ v: UInt32) -> [UInt8] {
            littleEndian ? u16(UInt16(v & 0xFFFF)) + u16(UInt16(v >> 16)) : u16(UInt16(v >> 16)) + u16(UInt16(v & 0xFFFF))
        }
        var bytes: [UInt8] = (littleEndian ? [0x49, 0x49] : [0x4D, 0x4D]) + u16(42) + u32(ifdOffset)
        bytes += u16(UInt16(entries.count))
        for entry in entries {
            let value = entry.type == 3 ? u16(UInt16(entry.value)) + [0, 0] : u32(entry.value)
            bytes += u16(entry.tag) + u16(entry.type) + u32(1) + value
        }
        return bytes + u32(0)
    }

    @Test("The parser reads both byte orders and every value", arguments: [true, false])
    func parser(littleEndian: Bool) {
        for value in 1...8 {
            let bytes = tiff(littleEndian: littleEndian, entries: [(0x010F, 2, 0), (0x0112, 3, UInt32(value))])
            #expect(ExifOrientation(tiff: bytes)?.rawValue == value)
        }
        #expect(ExifOrientation(tiff: tiff(littleEndian: littleEndian, entries: [(0x0112, 4, 6)])) == .right)
    }

    @Test("The parser refuses broken structures without reading out of bounds")
    func broken() {
        let good = tiff(littleEndian: true, entries: [(0x0112, 3, 6)])
        #expect(ExifOrientation(tiff: good) == .right)
        for length in 0..<good.count - 6 { #expect(ExifOrientation(tiff: Array(good.prefix(length))) == nil) }
        #expect(ExifOrientation(tiff: tiff(littleEndian: true, entries: [(0x0112, 3, 9)])) == nil)
        #expect(ExifOrientation(tiff: tiff(littleEndian: true, entries: [(0x0112, 3, 0)])) == nil)
        #expect(ExifOrientation(tiff: tiff(littleEndian: true, entries: [(0x0112, 3, 6)], ifdOffset: 0xFFFF_FFF0)) == nil)
        #expect(ExifOrientation(tiff: tiff(littleEndian: true, entries: [(0x0100, 3, 6)])) == nil)
        #expect(ExifOrientation(tiff: Array("XX*\0\0\0\0\u{8}".utf8)) == nil)
        // An IFD claiming 65535 entries in a few bytes.
        var lying = good
        lying[8] = 0xFF; lying[9] = 0xFF
        #expect(ExifOrientation(tiff: lying) == .right)
        lying[10] = 0; lying[11] = 0
        #expect(ExifOrientation(tiff: lying) == nil)
    }

    @Test("The transform maps corners as EXIF says")
    func transform() throws {
        // 3x2: a b c / d e f
        let image = try CourierImage(width: 3, height: 2, pixelFormat: .gray8, pixels: [1, 2, 3, 4, 5, 6])
        let expected: [ExifOrientation: (Int, [UInt8])] = [
            .up: (3, [1, 2, 3, 4, 5, 6]), .upMirrored: (3, [3, 2, 1, 6, 5, 4]), .down: (3, [6, 5, 4, 3, 2, 1]),
            .downMirrored: (3, [4, 5, 6, 1, 2, 3]), .leftMirrored: (2, [1, 4, 2, 5, 3, 6]), .right: (2, [4, 1, 5, 2, 6, 3]),
            .rightMirrored: (2, [6, 3, 5, 2, 4, 1]), .left: (2, [3, 6, 2, 5, 1, 4]),
        ]
        for (orientation, (width, pixels)) in expected {
            let oriented = image.oriented(orientation)
            #expect(oriented.width == width && oriented.pixels == pixels, "\(orientation)")
        }
    }
}
