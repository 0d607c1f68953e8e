import HTTPTypes

/// Whether a response may be stored by this private cache (RFC 9111 §3), and which of its header
/// fields are kept (§3.1).
enum CacheStorability {
    /// The outcome of `verdict(...)`.
    enum Verdict: Sendable, Equatable {
        case storable
        case notStorable(Reason)
    }

    /// Why a response is not stored, in the order the checks run.
    enum Reason: Sendable, Equatable {
        /// Only GET responses are stored (§3: "the request method is understood by the cache").
        case methodNotCacheable
        /// 1xx and out-of-range statuses are not final (§3).
        case statusNotFinal
        /// 304 is not stored, nor a 206 that is not one unencoded range of a known length (§3.3, see
        /// `CachePartialContent`), nor an unfamiliar status marked `must-understand` (§3, §5.2.2.3).
        case statusNotUnderstood
        /// The request said `no-store` (§5.2.1.5).
        case noStoreInRequest
        /// The response said `no-store` (§5.2.2.5).
        case noStoreInResponse
        /// No explicit freshness, no `public`/`private`, and a status that is not heuristically
        /// cacheable (§3, last bullet).
        case noCacheabilitySignal
    }

    /// Statuses defined as heuristically cacheable (RFC 9110 §15.1).
    static let heuristicallyCacheableStatuses: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Final statuses whose caching requirements this cache implements, for `must-understand`
    /// (§5.2.2.3): those defined by RFC 9110 §15, less 304, which it never stores.
    static let understoodStatuses: Set<Int> = Set(200...206).union(300...303).union([305, 307, 308])
        .union(400...417).union([421, 422, 426]).union(500...505)

    /// Whether `status` is heuristically cacheable (RFC 9110 §15.1).
    static func isHeuristicallyCacheable(_ status: HTTPResponse.Status) -> Bool {
        heuristicallyCacheableStatuses.contains(status.code)
    }

    /// Decides whether the response to a request may be stored (RFC 9111 §3).
    ///
    /// `no-cache` responses are storable: they are revalidated on every use (§5.2.2.4). With
    /// `must-understand` on an understood status, `no-store` is ignored (§5.2.2.3). RFC 9111 §3.5
    /// restricts responses to requests with `Authorization` in shared caches only: this is a private
    /// cache, so they are stored, each in the partition of its credentials (the caller's
    /// `credentialPartition`), never served to a request with other credentials.
    static func verdict(
        requestMethod: HTTPRequest.Method,
        requestHeaders: HTTPFields,
        status: HTTPResponse.Status,
        responseHeaders: HTTPFields
    ) -> Verdict {
        guard requestMethod == .get else { return .notStorable(.methodNotCacheable) }
        guard (200...599).contains(status.code) else { return .notStorable(.statusNotFinal) }
        let response = CacheControl(responseHeaders: responseHeaders)
        let understood = understoodStatuses.contains(status.code)
        let unusablePartial = status.code == 206 && CachePartialContent.storableSpan(status: status, headers: responseHeaders) == nil
        if unusablePartial || status.code == 304 || (response.mustUnderstand && !understood) {
            return .notStorable(.statusNotUnderstood)
        }
        if CacheControl(requestHeaders: requestHeaders).noStore { return .notStorable(.noStoreInRequest) }
        if response.noStore && !(response.mustUnderstand && understood) {
            return .notStorable(.noStoreInResponse)
        }
        let signalled = response.isPublic || response.isPrivate || response.maxAge.isPresent
            || responseHeaders.contains(.expires) || isHeuristicallyCacheable(status)
        return signalled ? .storable : .notStorable(.noCacheabilitySignal)
    }

    /// `verdict(...) == .storable`.
    static func canStore(
        requestMethod: HTTPRequest.Method,
        requestHeaders: HTTPFields,
        status: HTTPResponse.Status,
        responseHeaders: HTTPFields
    ) -> Bool {
        verdict(requestMethod: requestMethod, requestHeaders: requestHeaders, status: status,
                responseHeaders: responseHeaders) == .storable
    }

    /// Fields never stored (RFC 9111 §3.1): hop-by-hop fields that must be removed before forwarding
    /// (RFC 9110 §7.6.1) and fields specific to the proxy in use.
    static let unstorableFieldNames: Set<HTTPField.Name> = [
        .connection, CacheHeaderSyntax.keepAlive, CacheHeaderSyntax.proxyConnection, .te,
        .transferEncoding, .upgrade, .proxyAuthenticate, .proxyAuthorization, .proxyAuthenticationInfo,
        .trailer,
    ]

    /// The header fields to store (RFC 9111 §3.1): all of them, unrecognised ones included, except
    /// `Connection`, every field it names, and the fields in `unstorableFieldNames`.
    static func storedHeaders(from headers: HTTPFields) -> HTTPFields {
        let listed = CacheHeaderSyntax.listElements(headers[values: .connection]).compactMap(CacheHeaderSyntax.fieldName)
        let isExcluded = { (field: HTTPField) in unstorableFieldNames.contains(field.name) || listed.contains(field.name) }
        // Most responses need no copy (an HTTP/1.1 one with `Connection: keep-alive` does).
        guard headers.contains(where: isExcluded) else { return headers }
        return HTTPFields(headers.filter { !isExcluded($0) })
    }
}
