import HTTPTypes

/// The parsed `Cache-Control` field of a request or a response (RFC 9111 §5.2).
///
/// Every field line is read and the comma-separated list parsed per RFC 9110 §5.6.1 (OWS around
/// elements, empty elements ignored); arguments may be tokens or quoted strings with backslash
/// escapes (RFC 9110 §5.6.4), and RFC 9111 §5.2 asks recipients to accept both forms for every
/// directive. Directive names are case-insensitive. Unknown directives are kept in `directives` and
/// otherwise ignored (§5.2.3); elements whose name is not a token are dropped.
///
/// Arguments are validated per directive. A delta-seconds argument that is missing, negative or not
/// all digits makes that directive `.invalid`, as does the same directive appearing twice with
/// different values (§4.2.1 allows treating such a response as stale). Callers choose the most
/// restrictive reading of `.invalid` (a response `max-age` then means "stale"); see the uses in
/// `CacheFreshness` and `CacheLookup`.
struct CacheControl: Sendable, Equatable {
    /// One list element: a lowercased directive name and its argument, unquoted, if any.
    struct Directive: Sendable, Equatable {
        var name: String
        var argument: String?
    }

    /// A delta-seconds directive (RFC 9111 §1.2.2): absent, a valid value (capped at 2^31), or
    /// present but unusable.
    enum DeltaSeconds: Sendable, Equatable {
        case absent
        case seconds(Int)
        case invalid

        /// The value when valid.
        var seconds: Int? {
            if case .seconds(let value) = self { return value }
            return nil
        }

        /// Whether the directive appeared at all, valid or not.
        var isPresent: Bool { self != .absent }
    }

    /// The `max-stale` request directive (RFC 9111 §5.2.1.2): without an argument any staleness is
    /// accepted.
    enum MaxStale: Sendable, Equatable {
        case absent
        case any
        case seconds(Int)
        case invalid

        /// Whether a response stale by `staleness` seconds is acceptable to the client.
        func accepts(staleness: Int) -> Bool {
            switch self {
            case .any: true
            case .seconds(let limit): staleness <= limit
            case .absent, .invalid: false
            }
        }
    }

    /// All parsed directives in field order, unknown ones included.
    let directives: [Directive]

    /// `max-age` (request §5.2.1.1, response §5.2.2.1).
    let maxAge: DeltaSeconds
    /// `s-maxage` (§5.2.2.10): parsed, but a private cache ignores it for freshness.
    let sMaxAge: DeltaSeconds
    /// `min-fresh` (request, §5.2.1.3).
    let minFresh: DeltaSeconds
    /// `max-stale` (request, §5.2.1.2).
    let maxStale: MaxStale
    /// `stale-while-revalidate` (response, RFC 5861 §3).
    let staleWhileRevalidate: DeltaSeconds
    /// `stale-if-error` (request or response, RFC 5861 §4).
    let staleIfError: DeltaSeconds
    /// `no-cache` with or without a field-name list (§5.2.1.4, §5.2.2.4); for a request, also set
    /// by `Pragma: no-cache` when there is no Cache-Control (§5.4).
    let noCache: Bool
    /// `no-store` (§5.2.1.5, §5.2.2.5).
    let noStore: Bool
    /// `private` with or without a field-name list (§5.2.2.7).
    let isPrivate: Bool
    /// `public` (§5.2.2.9).
    let isPublic: Bool
    /// `must-revalidate` (§5.2.2.2).
    let mustRevalidate: Bool
    /// `proxy-revalidate` (§5.2.2.8): applies to shared caches only.
    let proxyRevalidate: Bool
    /// `must-understand` (§5.2.2.3).
    let mustUnderstand: Bool
    /// `no-transform` (§5.2.1.6, §5.2.2.6).
    let noTransform: Bool
    /// `immutable` (RFC 8246).
    let immutable: Bool
    /// `only-if-cached` (request, §5.2.1.7).
    let onlyIfCached: Bool

    /// Parses the given Cache-Control field lines (RFC 9111 §5.2).
    init(fieldLines: [String]) {
        self.init(directives: Self.parse(fieldLines), pragmaNoCache: false)
    }

    /// The Cache-Control of a response. Response `Pragma` has no defined meaning (§5.4) and is
    /// ignored.
    init(responseHeaders: HTTPFields) {
        self.init(fieldLines: responseHeaders[values: .cacheControl])
    }

    /// The Cache-Control of a request, with `Pragma: no-cache` read as `Cache-Control: no-cache` when
    /// the request carries no Cache-Control directive (RFC 9111 §5.4).
    init(requestHeaders: HTTPFields) {
        let directives = Self.parse(requestHeaders[values: .cacheControl])
        let pragma = CacheHeaderSyntax.listElements(requestHeaders[values: CacheHeaderSyntax.pragma])
        let pragmaNoCache = directives.isEmpty
            && pragma.contains { CacheHeaderSyntax.asciiLowercased($0) == "no-cache" }
        self.init(directives: directives, pragmaNoCache: pragmaNoCache)
    }

    private init(directives: [Directive], pragmaNoCache: Bool) {
        self.directives = directives
        maxAge = Self.deltaSeconds("max-age", in: directives)
        sMaxAge = Self.deltaSeconds("s-maxage", in: directives)
        minFresh = Self.deltaSeconds("min-fresh", in: directives)
        staleWhileRevalidate = Self.deltaSeconds("stale-while-revalidate", in: directives)
        staleIfError = Self.deltaSeconds("stale-if-error", in: directives)
        maxStale = Self.maxStale(in: directives)
        // One pass over the (few) directives, no set built: this runs for every request and response.
        var noCache = pragmaNoCache, noStore = false, isPrivate = false, isPublic = false, mustRevalidate = false
        var proxyRevalidate = false, mustUnderstand = false, noTransform = false, immutable = false, onlyIfCached = false
        for directive in directives {
            switch directive.name {
            case "no-cache": noCache = true
            case "no-store": noStore = true
            case "private": isPrivate = true
            case "public": isPublic = true
            case "must-revalidate": mustRevalidate = true
            case "proxy-revalidate": proxyRevalidate = true
            case "must-understand": mustUnderstand = true
            case "no-transform": noTransform = true
            case "immutable": immutable = true
            case "only-if-cached": onlyIfCached = true
            default: break
            }
        }
        self.noCache = noCache
        self.noStore = noStore
        self.isPrivate = isPrivate
        self.isPublic = isPublic
        self.mustRevalidate = mustRevalidate
        self.proxyRevalidate = proxyRevalidate
        self.mustUnderstand = mustUnderstand
        self.noTransform = noTransform
        self.immutable = immutable
        self.onlyIfCached = onlyIfCached
    }

    /// Whether a directive named `name` (case-insensitive) is present, known or not.
    func contains(_ name: String) -> Bool {
        let lowered = CacheHeaderSyntax.asciiLowercased(name)
        return directives.contains { $0.name == lowered }
    }

    // MARK: - Parsing

    /// Splits the field lines into directives: `token [ "=" ( token / quoted-string ) ]`.
    /// Whitespace around `=` is tolerated; an argument that is neither a token nor a quoted string
    /// (e.g. `max-age=1 2`) is kept verbatim so that its directive's validation rejects it.
    private static func parse(_ fieldLines: [String]) -> [Directive] {
        CacheHeaderSyntax.listElements(fieldLines).compactMap { element in
            let name: Substring
            var argument: String?
            if let equals = element.unicodeScalars.firstIndex(of: "=") {
                name = CacheHeaderSyntax.trimmingOWS(element[..<equals])
                let raw = CacheHeaderSyntax.trimmingOWS(element[element.unicodeScalars.index(after: equals)...])
                argument = CacheHeaderSyntax.unquoted(raw)
            } else {
                name = element
            }
            guard CacheHeaderSyntax.isToken(name) else { return nil }
            return Directive(name: CacheHeaderSyntax.asciiLowercased(name), argument: argument)
        }
    }

    /// The value of a delta-seconds directive; `.invalid` when any occurrence lacks a valid argument
    /// or occurrences disagree (RFC 9111 §4.2.1, §1.2.2).
    private static func deltaSeconds(_ name: String, in directives: [Directive]) -> DeltaSeconds {
        var value = DeltaSeconds.absent
        for directive in directives where directive.name == name {
            guard let seconds = directive.argument.flatMap(CacheHeaderSyntax.deltaSeconds) else { return .invalid }
            if case .seconds(let earlier) = value, earlier != seconds { return .invalid }
            value = .seconds(seconds)
        }
        return value
    }

    /// The `max-stale` directive: no argument means any staleness; several occurrences resolve to
    /// the most restrictive one.
    private static func maxStale(in directives: [Directive]) -> MaxStale {
        var isPresent = false
        var limit: Int?
        for occurrence in directives where occurrence.name == "max-stale" {
            isPresent = true
            guard let argument = occurrence.argument else { continue }
            guard let value = CacheHeaderSyntax.deltaSeconds(argument) else { return .invalid }
            limit = min(limit ?? value, value)
        }
        guard isPresent else { return .absent }
        return limit.map(MaxStale.seconds) ?? .any
    }
}
