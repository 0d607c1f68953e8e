import Foundation
import NIOCore
import NIOHTTP1

/// A request being received on one connection: its head plus the body bytes seen so far.
struct IncomingRequest {
    /// Largest body kept in memory; beyond this only the byte count is tracked.
    static let bufferedBodyLimit = 8 << 20

    /// Identity assigned by ``ServerStatistics``.
    let ticket: ServerStatistics.Ticket
    /// The request head as decoded by NIO.
    let head: HTTPRequestHead
    /// The path (request target up to the first `?`).
    let path: String
    /// The raw query string (after the first `?`), or `nil` when there is none.
    let query: String?
    /// The body bytes received so far, unless more than ``bufferedBodyLimit`` arrived.
    private(set) var body: [UInt8] = []
    /// Total number of body bytes received.
    private(set) var bodyByteCount = 0
    /// Whether the body exceeded ``bufferedBodyLimit`` (``body`` then holds only a prefix).
    private(set) var bodyOverflowed = false
    /// The trailer fields that followed a chunked body, if any.
    var trailers: [(name: String, value: String)]?

    /// Creates the request for `head`, splitting its target into path and query.
    init(ticket: ServerStatistics.Ticket, head: HTTPRequestHead) {
        self.ticket = ticket
        self.head = head
        (self.path, self.query) = Self.split(uri: head.uri)
    }

    /// Splits a request target into path and optional query.
    static func split(uri: String) -> (path: String, query: String?) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, nil) }
        return (String(uri[..<mark]), String(uri[uri.index(after: mark)...]))
    }

    /// Appends a chunk of the request body, keeping at most ``bufferedBodyLimit`` bytes
    /// (only the first ``ServerStatistics/recordedBodyLimit`` once that limit is exceeded).
    mutating func append(_ chunk: ByteBuffer) {
        bodyByteCount += chunk.readableBytes
        if bodyOverflowed { return }
        if bodyByteCount > Self.bufferedBodyLimit {
            bodyOverflowed = true
            let keep = ServerStatistics.recordedBodyLimit
            if body.count > keep {
                body.removeSubrange(keep...)
            } else {
                body += chunk.readableBytesView.prefix(keep - body.count)
            }
            return
        }
        body += chunk.readableBytesView
    }

    /// The request method as text, e.g. `"GET"`.
    var method: String { head.method.rawValue }

    /// Whether the connection stays open after the response (HTTP/1.1 semantics).
    var keepAlive: Bool { head.isKeepAlive }

    /// Whether the response must not carry a body because the method is `HEAD`.
    var isHead: Bool { head.method == .HEAD }

    /// Headers in order with their original names.
    var headerList: [(name: String, value: String)] {
        head.headers.map { (name: $0.name, value: $0.value) }
    }

    /// First value of the header `name` (case-insensitive), if present.
    func header(_ name: String) -> String? {
        head.headers.first(name: name)
    }

    /// Query parameters decoded as `application/x-www-form-urlencoded`; the last value wins.
    var queryParameters: [String: String] {
        Self.decodeForm(query ?? "")
    }

    /// Decodes `a=1&b=x+y` style text; `+` means space, percent escapes are decoded,
    /// repeated keys keep their last value and malformed escapes are kept verbatim.
    static func decodeForm(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = decodeComponent(parts[0])
            let value = parts.count > 1 ? decodeComponent(parts[1]) : ""
            result[key] = value
        }
        return result
    }

    private static func decodeComponent(_ component: Substring) -> String {
        let spaced = component.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
