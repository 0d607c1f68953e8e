import Foundation

/// The `Basic` authentication scheme (RFC 7617): `Basic base64(user-id ":" password)`, UTF-8.
///
/// Pure; the interceptor that adds the field lives with the request pipeline. The user and password
/// are sent as given (no Unicode normalisation), which is what RFC 7617 §2.1's `charset="UTF-8"`
/// asks for whenever they are already in NFC, as text typed on every common platform is.
enum BasicAuthentication {
    /// The `Authorization` (or `Proxy-Authorization`) field value for `credentials`.
    /// - Parameter credentials: The user and password.
    /// - Returns: `Basic` and the base64 of `user:password` in UTF-8.
    /// - Throws: ``NetworkError`` with code `invalidCredentials` when the user contains `:`, or
    ///   either part contains a control character (RFC 7617 §2).
    static func authorization(for credentials: PasswordCredentials) throws(NetworkError) -> String {
        if credentials.user.contains(":") {
            throw NetworkError(.invalidCredentials, "A Basic user-id cannot contain ':'")
        }
        if containsControlCharacter(credentials.user) || containsControlCharacter(credentials.password) {
            throw NetworkError(.invalidCredentials, "Basic credentials cannot contain control characters")
        }
        return "Basic " + Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString()
    }

    /// Whether `text` holds a CTL (U+0000-U+001F, U+007F) or a C1 control (U+0080-U+009F).
    static func containsControlCharacter(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }
}
