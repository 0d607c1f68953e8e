public import Foundation
public import HTTPTypes

/// A jar is an interceptor: give it to engines (``NetworkEngine/Configuration/cookieJar``) and it sends
/// its cookies with every request, redirect hop, retry and outbox replay, and stores the `Set-Cookie`
/// fields of every response head, redirects included. Cookies never go into the outbox or the cache:
/// they are added as each request leaves.
extension CookieJar: RequestInterceptor {
    /// Adds the jar's cookies for the request's URL to its `Cookie` field (after any the operation set).
    public func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
        guard let header = await cookieHeader(for: context.url) else { return request }
        var request = request
        if let own = request.headerFields[.cookie], !own.isEmpty {
            request.headerFields[.cookie] = own + "; " + header
        } else {
            request.headerFields[.cookie] = header
        }
        return request
    }

    /// The cookies a request for `url` would carry, for the cache's partition (without counting them as
    /// used). Before a persisted jar has read its file, a value no other lookup has: a miss, never another
    /// user's response.
    public func cacheCredentials(for url: URL) -> HTTPFields {
        guard let cookies = loadedCookies(for: url) else { return [.cookie: "unloaded-\(UUID().uuidString)"] }
        guard !cookies.isEmpty else { return [:] }
        return [.cookie: cookies.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")]
    }

    /// Stores the response's `Set-Cookie` fields for the URL that answered.
    public func didReceive(_ response: HTTPResponse, for request: HTTPRequest, context: InterceptorContext) async {
        guard response.headerFields[.setCookie] != nil else { return }
        setCookies(from: response.headerFields, for: context.url)
    }
}
