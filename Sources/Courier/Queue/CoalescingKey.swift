import HTTPTypes

/// What makes two operations the same network request: same method, same ``NetworkOperation/uniqueIdentifier``
/// (normalised URL and body digest), same request headers, and the same transport behaviour.
///
/// Only GET and HEAD operations that allow coalescing have a key.
struct CoalescingKey: Hashable, Sendable {
    let uniqueIdentifier: String
    /// Header fields as `lowercased-name: value`, sorted, so order and case do not matter.
    let headers: [String]
    let options: TransportOptions
    let redirects: RedirectPolicy
    let maximumBodySize: Int
    let totalTimeout: Duration?

    init(request: PreparedRequest, uniqueIdentifier: String) {
        self.uniqueIdentifier = uniqueIdentifier
        self.headers = request.headers.map { "\($0.name.canonicalName): \($0.value)" }.sorted()
        self.options = request.options
        self.redirects = request.redirects
        self.maximumBodySize = request.maximumBodySize
        self.totalTimeout = request.totalTimeout
    }
}
