import Foundation
import NIOCore
import Testing
@testable import Courier

/// Helpers for the transfer component tests: temporary folders, collecting streams, reading multipart.
enum TransferTestSupport {
    /// A fresh folder under the system's temporary directory, removed after `body`.
    static func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-transfer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await body(folder)
    }

    /// Every byte of a stream, and the size of each chunk.
    static func collect<S: AsyncSequence>(_ stream: S) async throws -> (bytes: [UInt8], chunks: [Int]) where S.Element == ByteBuffer {
        var bytes: [UInt8] = []
        var chunks: [Int] = []
        for try await chunk in stream {
            chunks.append(chunk.readableBytes)
            bytes.append(contentsOf: chunk.readableBytesView)
        }
        return (bytes, chunks)
    }

    /// Collects an existential stream (the form `RequestBodySource.makeStream()` returns).
    static func collect(any stream: any AsyncSequence<ByteBuffer, any Error> & Sendable) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        for try await chunk in stream { bytes.append(contentsOf: chunk.readableBytesView) }
        return bytes
    }

    /// One part of a parsed multipart body.
    struct Part: Equatable {
        var headers: [String: String]
        var body: [UInt8]
    }

    /// A minimal multipart/form-data reader (RFC 2046 §5.1.1 framing as RFC 7578 uses it): checks the
    /// opening delimiter, splits on `CRLF--boundary`, and requires the closing `--boundary--CRLF`.
    static func parseMultipart(_ body: [UInt8], boundary: String) -> [Part]? {
        let opening = Array("--\(boundary)\r\n".utf8)
        let separator = Array("\r\n--\(boundary)".utf8)
        guard body.starts(with: opening) else { return nil }
        var parts: [Part] = []
        var position = opening.count
        while true {
            guard let end = firstIndex(of: separator, in: body, from: position) else { return nil }
            let raw = Array(body[position..<end])
            guard let blank = firstIndex(of: Array("\r\n\r\n".utf8), in: raw, from: 0) else { return nil }
            var headers: [String: String] = [:]
            for line in String(decoding: raw[..<blank], as: UTF8.self).components(separatedBy: "\r\n") {
                guard let colon = line.firstIndex(of: ":") else { return nil }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            parts.append(Part(headers: headers, body: Array(raw[(blank + 4)...])))
            let after = end + separator.count
            let rest = Array(body[after...])
            if rest == Array("--\r\n".utf8) { return parts }
            guard rest.starts(with: Array("\r\n".utf8)) else { return nil }
            position = after + 2
        }
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        var index = start
        while index + needle.count <= haystack.count {
            if haystack[index] == needle[0], Array(haystack[index..<(index + needle.count)]) == needle { return index }
            index += 1
        }
        return nil
    }
}
