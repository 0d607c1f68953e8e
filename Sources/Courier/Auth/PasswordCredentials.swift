public import Foundation

/// A user name and password, for Basic (RFC 7617) and Digest (RFC 7616) authentication.
///
/// Both are used as UTF-8. The credentials are never logged or written to disk by Courier; their
/// `description` masks the password.
///
/// ```swift
/// let credentials = PasswordCredentials(user: "Mufasa", password: "Circle of Life")
/// let fromURL = PasswordCredentials(userInfoOf: URL(string: "https://aladdin:open%20sesame@example.com/")!)
/// // fromURL?.password == "open sesame"
/// ```
public struct PasswordCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The user name (user-id).
    public var user: String
    /// The password.
    public var password: String

    /// Creates credentials.
    /// - Parameters:
    ///   - user: The user name. For Basic it must not contain `:` (sending fails with
    ///     `NetworkError.Code.invalidCredentials` then).
    ///   - password: The password; it may contain `:`.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// The credentials in a URL's userinfo (`scheme://user:password@host/`), percent-decoded.
    ///
    /// A userinfo without a password gives an empty password.
    /// - Parameter url: The URL.
    /// - Returns: `nil` when the URL has no user, or its userinfo is not valid percent-encoding.
    public init?(userInfoOf url: URL) {
        // Without an "@" there is no user information: most URLs are not parsed a second time.
        guard url.absoluteString.utf8.contains(UInt8(ascii: "@")),
            let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let encodedUser = components.percentEncodedUser,
            let user = encodedUser.removingPercentEncoding
        else { return nil }
        let password: String
        if let encodedPassword = components.percentEncodedPassword {
            guard let decoded = encodedPassword.removingPercentEncoding else { return nil }
            password = decoded
        } else {
            password = ""
        }
        self.init(user: user, password: password)
    }

    /// The user and a masked password.
    public var description: String { "PasswordCredentials(user: \(user), password: ***)" }
}
