/// A snapshot of one request received by a ``TestServer``.
///
/// Requests are recorded when their head arrives; the ``body`` is filled in once the
/// request body has been received completely. At most 1 MiB of each body is kept.
public struct RecordedRequest: Sendable {
    /// The request method as sent by the client, e.g. `"GET"`.
    public var method: String
    /// The request target (path plus query) exactly as received, e.g. `"/get?a=1"`.
    public var uri: String
    /// The path component of ``uri`` (everything before the first `?`).
    public var path: String
    /// All request headers in the order received; duplicates are kept.
    public var headers: [(name: String, value: String)]
    /// The request body (truncated to the first 1 MiB).
    public var body: [UInt8]

    /// Creates a recorded request (internal: only the server records requests).
    ///
    /// - Parameters:
    ///   - method: The request method.
    ///   - uri: The request target (path plus query).
    ///   - path: The path component of `uri`.
    ///   - headers: The request headers in order, duplicates kept.
    ///   - body: The (possibly truncated) request body.
    init(
        method: String,
        uri: String,
        path: String,
        headers: [(name: String, value: String)],
        body: [UInt8] = []
    ) {
        self.method = method
        self.uri = uri
        self.path = path
        self.headers = headers
        self.body = body
    }

    /// Returns the first value of the header called `name`, compared case-insensitively,
    /// or `nil` when the request has no such header.
    ///
    /// - Parameter name: The header name, in any letter case.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}
