public import Foundation
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
    /// The credentials sent.
    public var credentials: PasswordCredentials

    /// Creates an authenticator for these credentials. (Credentials in an operation's URL need none:
    /// `NetworkEngine.operation(url:params:method:body:)` sends them with Basic itself.)
    public init(credentials: PasswordCredentials) {
        self.credentials = credentials
    }

    /// Creates an authenticator for a user and password.
    public init(user: String, password: String) {
        self.init(credentials: PasswordCredentials(user: user, password: password))
    }

    /// The credentials, for the cache's partition.
    public func cacheCredentials(for url: URL) -> HTTPFields {
        guard let value = try? BasicAuthentication.authorization(for: credentials) else { return [:] }
        return [.authorization: value]
    }

    /// Adds the `Authorization` field to requests for the operation's own origin.
    public func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
        guard !context.isCrossOrigin else { return request }
        var request = request
        request.headerFields[.authorization] = try BasicAuthentication.authorization(for: credentials)
        return request
    }
}
