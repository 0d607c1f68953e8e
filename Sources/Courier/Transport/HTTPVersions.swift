/// Which HTTP versions an engine may use.
///
/// With ``automatic`` (the default), an https connection offers HTTP/2 and HTTP/1.1 by ALPN and the
/// server picks; plain http is HTTP/1.1. Over HTTP/2 one connection per host carries many requests at
/// once: the queue's width still bounds how many of an engine's operations run, each as a stream of
/// that connection (see the "Trust, pinning and proxies" article). ``http1Only`` never offers HTTP/2
/// (curl's `--http1.1`), for a server or middlebox whose HTTP/2 is broken.
public enum HTTPVersions: Sendable, Hashable {
    /// HTTP/2 when the server offers it over TLS, HTTP/1.1 otherwise.
    case automatic
    /// HTTP/1.1 only.
    case http1Only
}

extension NetworkResponse {
    /// The HTTP version a response came over: `HTTP/1.1`, `HTTP/2`.
    public struct ProtocolVersion: Sendable, Hashable, CustomStringConvertible {
        /// The major version.
        public var major: Int
        /// The minor version.
        public var minor: Int

        /// Creates a version.
        /// - Parameters:
        ///   - major: The major version.
        ///   - minor: The minor version.
        public init(major: Int, minor: Int) {
            self.major = major
            self.minor = minor
        }

        /// HTTP/1.0.
        public static let http1_0 = ProtocolVersion(major: 1, minor: 0)
        /// HTTP/1.1.
        public static let http1_1 = ProtocolVersion(major: 1, minor: 1)
        /// HTTP/2.
        public static let http2 = ProtocolVersion(major: 2, minor: 0)

        /// As on a status line: `HTTP/1.1`, `HTTP/2` (a major version past 1 has no minor, RFC 9113).
        public var description: String { major >= 2 ? "HTTP/\(major)" : "HTTP/\(major).\(minor)" }
    }
}
