import HTTPTypes

/// What makes two operations the same network request: same method, same ``NetworkOperation/uniqueIdentifier``
/// (normalised URL and body digest), same request headers, the same transport behaviour, and the same
/// way of running: the same ``LinkGroup`` (the queue parks or runs the flight by it: same reachability,
/// limits and `wifiOnlyMode`), the same transport object (a proxy or client certificate lives there),
/// and the same credential provider and interceptors (one engine's: closures cannot be compared; an
/// operation with interceptors of its own has no key). Engines that differ in
/// any of these never share a flight, so a flight parked by one engine's width 0 holds no other engine's
/// operation, and no operation goes out over another engine's link, transport or credentials.
///
/// Only GET and HEAD operations that allow coalescing have a key. The hash is computed once: a key is
/// hashed on every insert, lookup and removal in the queue's coalescing table.
///
/// The fields live in one shared, immutable object: the queue keeps the key of every waiting operation
/// and flight (a copy is a reference, not 200 bytes), and a key compared with its own copy is equal at once.
struct CoalescingKey: Hashable, Sendable {
    private let fields: Fields

    /// The key's parts, immutable.
    private final class Fields: Sendable {
        let uniqueIdentifier: String
        /// The request's header fields; compared as a multiset (order and name case do not matter).
        let headers: HTTPFields
        /// An order-independent hash of ``headers``.
        let headersHash: Int
        let options: TransportOptions
        let redirects: RedirectPolicy
        let maximumBodySize: Int
        let totalTimeout: Duration?
        /// How the request runs: its queue group, its transport, its credential provider.
        let runner: Runner
        /// The names treated as credentials (dropped on a cross-origin redirect): part of how it runs.
        let sensitiveNames: Set<String>
        /// For a download to files, what decides that its body goes to the files; `nil` for a body kept in
        /// memory. Downloads share flights with downloads only.
        let download: DownloadKind?
        let precomputedHash: Int

        init(request: PreparedRequest, uniqueIdentifier: String, runner: Runner, download: DownloadKind?) {
            self.uniqueIdentifier = uniqueIdentifier
            self.download = download
            self.runner = runner
            self.sensitiveNames = request.sensitiveNames
            self.headers = request.headers
            self.headersHash = CoalescingKey.unorderedHash(of: request.headers)
            self.options = request.options
            self.redirects = request.redirects
            self.maximumBodySize = request.maximumBodySize
            self.totalTimeout = request.totalTimeout
            var hasher = Hasher()
            hasher.combine(uniqueIdentifier)
            hasher.combine(headersHash)
            hasher.combine(options)
            hasher.combine(redirects)
            hasher.combine(maximumBodySize)
            hasher.combine(totalTimeout)
            hasher.combine(runner)
            hasher.combine(sensitiveNames)
            hasher.combine(download)
            self.precomputedHash = hasher.finalize()
        }
    }

    /// What identical downloads to files must agree on to share one transfer.
    struct DownloadKind: Hashable, Sendable {
        /// The statuses whose body is written to the files, sorted.
        var acceptableStatusCodes: [Int]
    }

    /// Who runs a flight, as far as it changes the exchange.
    struct Runner: Hashable, Sendable {
        /// The ``LinkGroup`` id in the queue.
        var group: UInt64 = 0
        /// The transport object; an engine id when the transport is not an object (a value has no identity).
        var transport: Transport = .engine(0)
        /// The engine whose credential provider adds credentials, or `nil` for an engine without one.
        var credentialsOf: UInt64?
        /// The engine whose interceptors adapt and retry the request, or `nil` for an engine without any
        /// (interceptors cannot be compared: engines with interceptors share flights only among their own).
        var interceptorsOf: UInt64?
        /// The engine whose event monitors hear the flight, or `nil` for an engine without any (a flight
        /// reports to monitors when its first subscriber's engine has some: engines with monitors share
        /// flights only among their own).
        var monitorsOf: UInt64?

        enum Transport: Hashable, Sendable {
            case object(ObjectIdentifier)
            case engine(UInt64)
        }
    }

    /// The request's total timeout (a flight's deadline).
    var totalTimeout: Duration? { fields.totalTimeout }

    init(request: PreparedRequest, uniqueIdentifier: String, runner: Runner = Runner(), download: DownloadKind? = nil) {
        fields = Fields(request: request, uniqueIdentifier: uniqueIdentifier, runner: runner, download: download)
    }

    static func == (lhs: CoalescingKey, rhs: CoalescingKey) -> Bool {
        if lhs.fields === rhs.fields { return true }
        let (lhs, rhs) = (lhs.fields, rhs.fields)
        return lhs.precomputedHash == rhs.precomputedHash && lhs.uniqueIdentifier == rhs.uniqueIdentifier
            && lhs.headersHash == rhs.headersHash && Self.sameFields(lhs.headers, rhs.headers) && lhs.options == rhs.options && lhs.redirects == rhs.redirects
            && lhs.maximumBodySize == rhs.maximumBodySize && lhs.totalTimeout == rhs.totalTimeout
            && lhs.runner == rhs.runner && lhs.sensitiveNames == rhs.sensitiveNames && lhs.download == rhs.download
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(fields.precomputedHash)
    }

    /// A hash of the fields that ignores their order: the sum of each field's own hash (names are
    /// compared by their lowercase canonical form).
    static func unorderedHash(of fields: HTTPFields) -> Int {
        var sum = 0
        for field in fields {
            var hasher = Hasher()
            hasher.combine(field.name.canonicalName)
            hasher.combine(field.value)
            sum = sum &+ hasher.finalize()
        }
        return sum
    }

    /// Whether two field lists hold the same fields, in any order (asked only of keys whose hashes agree).
    static func sameFields(_ lhs: HTTPFields, _ rhs: HTTPFields) -> Bool {
        guard lhs.count == rhs.count else { return false }
        // The same fields in the same order (a key compared with its own copy in the queue's tables).
        if lhs == rhs { return true }
        func lines(_ fields: HTTPFields) -> [String] { fields.map { $0.name.canonicalName + ": " + $0.value }.sorted() }
        return lines(lhs) == lines(rhs)
    }
}
