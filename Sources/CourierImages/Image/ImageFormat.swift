public import Foundation

/// An encoded image format, recognised by the first bytes of the data (never by a URL or a
/// `Content-Type`, which servers get wrong).
public struct ImageFormat: Sendable, Hashable, CustomStringConvertible {
    /// The format's short name: `png`, `jpeg`, `webp`, `gif`.
    public let name: String
    private init(_ name: String) { self.name = name }

    /// PNG.
    public static let png = ImageFormat("png")
    /// JPEG (JFIF or Exif).
    public static let jpeg = ImageFormat("jpeg")
    /// WebP (lossy, lossless or extended).
    public static let webp = ImageFormat("webp")
    /// GIF (87a or 89a).
    public static let gif = ImageFormat("gif")

    /// The format whose signature `data` starts with, or `nil` when it is none of the known ones.
    public init?(sniffing data: Data) {
        let bytes = [UInt8](data.prefix(12))
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<offset + prefix.count]) == prefix
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            self = .png
        } else if starts([0xFF, 0xD8, 0xFF]) {
            self = .jpeg
        } else if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) {
            self = .webp
        } else if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) {
            self = .gif
        } else {
            return nil
        }
    }

    /// The format's media type (`image/png`, ...).
    public var mediaType: String { "image/\(name)" }

    /// The short name.
    public var description: String { name }
}
