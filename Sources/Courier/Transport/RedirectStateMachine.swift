import Foundation
import HTTPTypes

/// Decides, response by response, whether a request follows a redirect. Pure: no I/O.
struct RedirectStateMachine {
    enum Action {
        /// The response is final: deliver it.
        case deliver
        /// Send this request next.
        case follow(PreparedRequest)
        /// Stop with this error.
        case fail(NetworkError)
    }

    private(set) var current: PreparedRequest
    private(set) var chain: [RedirectHop] = []
    let originalURL: URL

    init(request: PreparedRequest) {
        self.current = request
        self.originalURL = request.url
    }

    /// The interceptors sent ``current`` to `url` (one rewrote it): a redirect is resolved against the
    /// URL the answer came from, and it is that URL's origin the next hop is compared with (a host an
    /// interceptor routed the request to cannot redirect it back to the engine's with its credentials).
    /// The rewrite is not kept in ``current``: a request sent again without a redirect (a resumable
    /// download's next range, a start over) is adapted again from the URL as composed.
    mutating func sent(to url: URL) {
        sentURL = url == current.url ? nil : url
    }

    /// Where the interceptors sent ``current``, when they rewrote its URL.
    private var sentURL: URL?

    /// The URLs of the hops before ``current``, in order (the original URL first, once a redirect was followed).
    var visited: [URL] { chain.map(\.url) }

    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// The response head for ``current`` arrived.
    mutating func receivedResponse(status: Int, headers: HTTPFields) -> Action {
        guard Self.redirectStatuses.contains(status), current.redirects.maximumRedirects > 0,
            let location = headers[.location]
        else { return .deliver }
        let from = sentURL ?? current.url
        sentURL = nil
        guard let target = URL(string: location, relativeTo: from)?.absoluteURL,
            let scheme = target.scheme?.lowercased(), target.host?.isEmpty == false
        else {
            return .fail(NetworkError(.invalidResponse, "the redirect location \"\(SensitiveParameters.masked(url: location))\" is not a valid URL", url: from.absoluteString))
        }
        guard scheme == "http" || scheme == "https" else {
            return .fail(NetworkError(.invalidURL, "a redirect to a \(scheme) URL cannot be followed", url: from.absoluteString))
        }
        if chain.count >= current.redirects.maximumRedirects {
            let visited = chain.map(\.url) + [from]
            let isLoop = Set(visited.map(\.absoluteString)).count < visited.count || visited.contains(target)
            return .fail(NetworkError(
                .tooManyRedirects,
                isLoop ? "redirect loop after \(chain.count) redirects" : "more than \(current.redirects.maximumRedirects) redirects",
                url: originalURL.absoluteString))
        }
        if from.scheme?.lowercased() == "https", scheme == "http", !current.redirects.allowsInsecureRedirects {
            return .fail(NetworkError(.insecureRedirect, "refusing to follow a redirect from https to \(SensitiveParameters.masked(url: target.absoluteString))", url: from.absoluteString))
        }
        chain.append(RedirectHop(url: from, statusCode: status, location: target))
        var next = current
        next.url = target
        // 303 turns anything but HEAD into a GET; so do 301 and 302 after a POST, as every browser does.
        let becomesGET = (status == 303 && current.method != .head)
            || ((status == 301 || status == 302) && current.method == .post)
        if becomesGET {
            next.method = .get
            next.body = nil
            next.bodySource = nil
            for name in [HTTPField.Name.contentType, .contentLength, .contentEncoding, .transferEncoding, .trailer] {
                next.headers[name] = nil
            }
        }
        next.headers[HTTPField.Name("Host")!] = nil
        if !Origin.same(from, target) {
            // Credentials never go to another origin: the standard ones, the engine's sensitive names and
            // whatever the credential provider added.
            next.headers = SensitiveHeaders.removed(CredentialFields.names.union(current.sensitiveNames), from: next.headers)
        }
        current = next
        return .follow(next)
    }

    /// Sets fields on the current request (a resumable download's `Range` and `If-Range`), first
    /// removing those named in `removing`.
    mutating func setHeaders(_ fields: HTTPFields, removing names: [HTTPField.Name] = []) {
        for name in names { current.headers[name] = nil }
        for field in fields { current.headers[field.name] = field.value }
    }

    /// The cache's completion request was not answered with the bytes it asked for: the current
    /// request is sent again without its `Range` and `If-Range`.
    mutating func dropCacheCompletion() {
        current.headers[.range] = nil
        current.headers[.ifRange] = nil
        current.cacheCompletion = nil
    }
}
