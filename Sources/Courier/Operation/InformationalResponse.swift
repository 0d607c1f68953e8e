public import HTTPTypes

/// An interim (`1xx`) response that arrived before the final one, such as `100 Continue` or
/// `103 Early Hints`. Never the operation's response; see ``NetworkOperation/onInformationalResponse(_:)``.
public struct InformationalResponse: Sendable, Hashable {
    /// The status (100-199, never 101).
    public var status: HTTPResponse.Status
    /// Its header fields, in order (for `103 Early Hints`, the `Link` fields).
    public var headers: HTTPFields

    /// Creates an interim response.
    /// - Parameters:
    ///   - status: The status.
    ///   - headers: The header fields.
    public init(status: HTTPResponse.Status, headers: HTTPFields) {
        self.status = status
        self.headers = headers
    }
}
