public import Foundation

/// The decoders the library ships, and decoding by signature.
public enum ImageDecoders {
    /// The platform's decoders: PNG, JPEG, WebP and GIF (first frame).
    public static var standard: [any ImageDecoder] { platformDecoders }

    /// Decodes `data` with the first of `decoders` that recognises its first bytes.
    /// - Throws: `NetworkError` `.unsupportedImageFormat` when none does (an HTML error page
    ///   served as `image/png`, random bytes), or what the decoder throws.
    public static func decode(
        _ data: Data, options: ImageDecodingOptions = ImageDecodingOptions(), decoders: [any ImageDecoder] = standard
    ) throws(NetworkError) -> CourierImage {
        guard let decoder = decoders.first(where: { $0.canDecode(data) }) else {
            let start = data.prefix(8).map { String(format: "%02x", $0) }.joined(separator: " ")
            throw NetworkError(.unsupportedImageFormat, "not an image format Courier decodes (starts with \(start.isEmpty ? "nothing" : start))")
        }
        return try decoder.decode(data, options: options)
    }
}
