import Foundation
import HTTPTypes

/// Invalidation after a state-changing request (RFC 9111 §4.4).
enum CacheInvalidation {
    /// Whether `method` is safe (RFC 9110 §9.2.1): GET, HEAD, OPTIONS, TRACE. Methods are
    /// case-sensitive, and any other method, unknown ones included, is unsafe.
    static func isSafe(_ method: HTTPRequest.Method) -> Bool {
        method == .get || method == .head || method == .options || method == .trace
    }

    /// The cache keys (see `CacheURLKey`) to invalidate after a response to `method` on
    /// `requestURL` (RFC 9111 §4.4). None for a safe method or an error status (only 2xx and 3xx
    /// count as non-error). Otherwise the target URI, then the `Location` and `Content-Location`
    /// URIs, resolved against the target URI when relative, if they have its origin (scheme, host,
    /// port, RFC 9110 §4.3.1). Without duplicates, in that order.
    static func invalidatedKeys(
        method: HTTPRequest.Method, requestURL: URL, status: HTTPResponse.Status, responseHeaders: HTTPFields
    ) -> [String] {
        guard !isSafe(method), (200...399).contains(status.code),
            let requestKey = CacheURLKey.key(for: requestURL),
            let requestOrigin = Origin(requestURL)
        else { return [] }
        var keys = [requestKey]
        for name in [HTTPField.Name.location, .contentLocation] {
            guard let value = responseHeaders[values: name].first,
                case let reference = CacheHeaderSyntax.trimmingOWS(Substring(value)), !reference.isEmpty,
                let resolved = URL(string: String(reference), relativeTo: requestURL)?.absoluteURL,
                Origin(resolved) == requestOrigin,
                let key = CacheURLKey.key(for: resolved), !keys.contains(key)
            else { continue }
            keys.append(key)
        }
        return keys
    }
}
