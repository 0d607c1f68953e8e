import HTTPTypes

/// What makes two operations the same network request: same method, same ``NetworkOperation/uniqueIdentifier``
/// (normalised URL and body digest), same request headers, and the same transport behaviour.
///
/// Only GET and HEAD operations that allow coalescing have a key. The hash is computed once: a key is
/// hashed on every insert, lookup and removal in the queue's coalescing table.
struct CoalescingKey: Hashable, Sendable {
    let uniqueIdentifier: String
    /// Header fields as `lowercased-name: value` lines, sorted, so order and case do not matter.
    let headers: String
    let options: TransportOptions
    let redirects: RedirectPolicy
    let maximumBodySize: Int
    let totalTimeout: Duration?
    private let precomputedHash: Int

    init(request: PreparedRequest, uniqueIdentifier: String) {
        self.uniqueIdentifier = uniqueIdentifier
        self.headers = request.headers.map { $0.name.canonicalName + ": " + $0.value }.sorted().joined(separator: "\n")
        self.options = request.options
        self.redirects = request.redirects
        self.maximumBodySize = request.maximumBodySize
        self.totalTimeout = request.totalTimeout
        var hasher = Hasher()
        hasher.combine(uniqueIdentifier)
        hasher.combine(headers)
        hasher.combine(options)
        hasher.combine(redirects)
        hasher.combine(maximumBodySize)
        hasher.combine(totalTimeout)
        self.precomputedHash = hasher.finalize()
    }

    static func == (lhs: CoalescingKey, rhs: CoalescingKey) -> Bool {
        lhs.precomputedHash == rhs.precomputedHash && lhs.uniqueIdentifier == rhs.uniqueIdentifier
            && lhs.headers == rhs.headers && lhs.options == rhs.options && lhs.redirects == rhs.redirects
            && lhs.maximumBodySize == rhs.maximumBodySize && lhs.totalTimeout == rhs.totalTimeout
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(precomputedHash)
    }
}
