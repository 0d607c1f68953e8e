import Foundation
public import HTTPTypes

/// Sends `Authorization: Basic` (RFC 7617) with every request to the operation's own origin, from the
/// first attempt on (as `curl --user` does): an interceptor that comes with Courier.
///
/// Basic sends the password itself (only encoded): use it over HTTPS. It is never sent after a redirect
/// to another origin. Credentials that cannot be sent (a user containing `:`, a control character) fail
/// the operation with ``NetworkError/Code/invalidCredentials`` before anything is sent.
/// ```swift
/// configuration.interceptors = [BasicAuthenticator(user: "ada", password: "secret")]
/// ```
public struct BasicAuthenticator: RequestInterceptor {
    /// The credentials sent; `nil` to take them from each operation's URL (`https://user:password@host/`).
    public var credentials: PasswordCredentials?

    /// Creates an authenticator for these credentials; without any, it sends the credentials of each
    /// operation's URL userinfo (percent-decoded), as curl and browsers do, and nothing for a URL without.
    public init(credentials: PasswordCredentials? = nil) {
        self.credentials = credentials
    }

    /// Creates an authenticator for a user and password.
    public init(user: String, password: String) {
        self.init(credentials: PasswordCredentials(user: user, password: password))
    }

    /// Adds the `Authorization` field to requests for the operation's own origin.
    public func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
        guard !context.isCrossOrigin, let credentials = credentials ?? PasswordCredentials(userInfoOf: context.originalURL) else {
            return request
        }
        var request = request
        request.headerFields[.authorization] = try BasicAuthentication.authorization(for: credentials)
        return request
    }
}
