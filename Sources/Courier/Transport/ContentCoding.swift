import Foundation
import NIOCore
import NIOHTTP1

/// What Courier asks for and decodes beside async-http-client's gzip and deflate: `br` (RFC 7932) when
/// libbrotli is present. One place for both transports.
enum ContentCoding {
    /// The `Accept-Encoding` sent when decompression is on, brotli can be decoded and the request names
    /// none of its own (without brotli, NIO's decompressor sends `deflate, gzip`).
    static let acceptingBrotli = "br, gzip, deflate"

    /// Adds `Accept-Encoding` offering brotli when it will be decoded and the request has none.
    /// - Parameters:
    ///   - headers: The request's head, as NIO sends it.
    ///   - decompression: The request's decompression setting.
    static func offerBrotli(in headers: inout HTTPHeaders, decompression: Decompression) {
        guard case .enabled = decompression, BrotliLibrary.isAvailable, !headers.contains(name: "Accept-Encoding") else { return }
        headers.add(name: "Accept-Encoding", value: acceptingBrotli)
    }

    /// The body decoded when it is `Content-Encoding: br` (the only coding) and decompression is on;
    /// otherwise `body` as it is.
    /// - Parameters:
    ///   - body: The body as received.
    ///   - encoding: The response's `Content-Encoding` value, if any.
    ///   - decompression: The request's decompression setting.
    ///   - url: The request's URL, for errors.
    /// - Returns: The body to read.
    static func decoding<Body: AsyncSequence & Sendable>(
        _ body: Body, encoding: String?, decompression: Decompression, url: String
    ) -> any AsyncSequence<ByteBuffer, any Error> & Sendable where Body.Element == ByteBuffer, Body.Failure == any Error {
        guard let encoding, case .enabled(let ratio) = decompression, BrotliLibrary.isAvailable,
              encoding.trimmingCharacters(in: .whitespaces).lowercased() == "br"
        else { return body }
        return BrotliDecodingBody(base: body, maximumRatio: ratio, url: url)
    }
}
