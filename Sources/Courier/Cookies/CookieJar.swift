public import Foundation
public import HTTPTypes
public import Logging
import NIOConcurrencyHelpers

/// A cookie jar (RFC 6265): stores the cookies of responses and gives the `Cookie` header of requests.
/// Kept in memory, or persisted in an SQLite file; safe to share between engines and tasks.
///
/// ```swift
/// let jar = CookieJar(persistingIn: dataDirectory)
/// jar.setCookies(from: response.headers, for: response.url)
/// if let cookie = await jar.cookieHeader(for: nextURL) {
///     request.headers[.cookie] = cookie
/// }
/// ```
///
/// Domain and path matching, host-only cookies, `Secure` (sent over https only), `Expires` and
/// `Max-Age` follow RFC 6265, with RFC 6265bis's stricter rules where they are safer; `HttpOnly` and
/// `SameSite` are stored and reported but change nothing for an HTTP client. A cookie whose `Domain` is
/// a public suffix (`co.uk`, `github.io`, `com`: the Public Suffix List, shipped with Courier) is
/// refused, unless that domain is the request host itself (it is then host-only); at most 180 cookies
/// are kept per site (registrable domain) and 3000 in all, least recently used evicted first. See
/// `CookieStorage` for every rule.
///
/// ## Persistence
/// `CookieJar(persistingIn:)` keeps the cookies in `cookies.sqlite` in a directory (created owner-only
/// when missing; the file is 0600). Nothing touches the disk on a caller's thread or the cooperative
/// pool: the file is opened and read on the jar's own serial dispatch queue, starting at `init`, and
/// changes are written there afterwards, coalesced (many changes between two writes make one
/// transaction). Until the file is read, the methods that read cookies (``cookieHeader(for:)``,
/// ``cookies(for:)``, ``allCookies``) wait for it (asynchronously); changes made meanwhile
/// (``setCookies(_:for:)``, ``remove(name:domain:)``, ``removeAll()``) apply on top of what is read, in
/// order. ``waitUntilPersisted()`` waits until every change made so far is on disk. Session cookies
/// are not written unless `keepsSessionCookies`. A damaged file is set aside (renamed
/// `cookies.sqlite.damaged-<time>`), logged, and the jar starts empty; a file that cannot be opened at
/// all leaves the jar working in memory. Use one jar per file in a process, shared by the engines.
///
/// Cookie values are secrets: the jar never logs them, and ``Cookie/description`` hides them.
public final class CookieJar: Sendable {
    struct State {
        var storage: CookieStorage
        /// Changes made before the file was read, with their times, applied after it (in order).
        var beforeLoad: [(Date, @Sendable (inout CookieStorage, Date) -> [CookieStorage.Change])]? = nil
        /// Readers waiting for the file to be read.
        var waiters: [CheckedContinuation<Void, Never>] = []
        var writes = CookieDatabase.Writes()
        var isWriteScheduled = false
    }

    let state: NIOLockedValueBox<State>
    /// The file; `nil` for a jar in memory.
    let database: CookieDatabase?
    /// Where the file is read and written (serial).
    let queue: DispatchQueue?
    let clock: @Sendable () -> Date

    /// A jar in memory: its cookies go when it does.
    public convenience init() {
        self.init(storage: CookieStorage(), clock: { Date() })
    }

    /// A jar persisted in `cookies.sqlite` inside a directory (such as the engine's data directory).
    ///
    /// Returns at once: the file is opened and read on the jar's queue (see "Persistence" above).
    /// - Parameters:
    ///   - directory: The directory; created owner-only (0700) when missing.
    ///   - keepsSessionCookies: Whether cookies without an expiry are written too, and so survive a
    ///     restart (`false`: they live only as long as this jar, as in a browser).
    ///   - logger: Where problems with the file are logged (never a cookie's value).
    public convenience init(persistingIn directory: URL, keepsSessionCookies: Bool = false, logger: Logger? = nil) {
        self.init(persistingAt: directory.appendingPathComponent("cookies.sqlite"), keepsSessionCookies: keepsSessionCookies, logger: logger)
    }

    /// A jar persisted in an SQLite file of the caller's choosing (such as the command line's
    /// `--cookie-jar FILE`); otherwise as ``init(persistingIn:keepsSessionCookies:logger:)``.
    /// - Parameters:
    ///   - file: The file; created 0600 when missing, its directory 0700 when missing.
    ///   - keepsSessionCookies: Whether cookies without an expiry are written too.
    ///   - logger: Where problems with the file are logged (never a cookie's value).
    public convenience init(persistingAt file: URL, keepsSessionCookies: Bool = false, logger: Logger? = nil) {
        self.init(file: file, keepsSessionCookies: keepsSessionCookies, logger: logger, limits: CookieStorage.Limits(), clock: { Date() })
    }

    /// A persistent jar with chosen limits and clock (tests).
    init(
        file: URL, keepsSessionCookies: Bool, logger: Logger?, limits: CookieStorage.Limits,
        clock: @escaping @Sendable () -> Date
    ) {
        let database = CookieDatabase(file: file, keepsSessionCookies: keepsSessionCookies, logger: logger)
        self.database = database
        self.queue = DispatchQueue(label: "courier.cookies")
        self.clock = clock
        self.state = NIOLockedValueBox(State(storage: CookieStorage(limits: limits), beforeLoad: []))
        queue?.async { [self] in load() }
    }

    /// A jar in memory with a chosen storage and clock (tests).
    init(storage: CookieStorage, clock: @escaping @Sendable () -> Date) {
        self.database = nil
        self.queue = nil
        self.clock = clock
        self.state = NIOLockedValueBox(State(storage: storage))
    }

    deinit {
        // Work still queued holds the jar, so none is left; the file closes on the jar's queue, never on
        // the thread that let go of the jar.
        if let queue, let database { queue.async { database.close() } }
    }

    // MARK: Reading

    /// The value of the `Cookie` header for a request to a URL (`a=1; b=2`), or `nil` when no cookie
    /// applies. The cookies sent count as used (their last-access date moves).
    ///
    /// Call it before each attempt and each redirect hop: the jar, not the request, carries cookies
    /// from one hop to the next.
    /// - Parameter url: The request's URL.
    /// - Returns: The header value, or `nil`.
    public func cookieHeader(for url: URL) async -> String? {
        await loaded()
        let now = clock()
        let (value, changes) = state.withLockedValue { $0.storage.cookieHeader(for: url, now: now) }
        persist(changes)
        return value
    }

    /// The cookies that a request to a URL would carry, in `Cookie` header order (longer paths first,
    /// then earlier creation). Does not count as using them.
    /// - Parameter url: The URL.
    /// - Returns: The cookies.
    public func cookies(for url: URL) async -> [Cookie] {
        await loaded()
        let now = clock()
        return state.withLockedValue { $0.storage.peekCookies(for: url, now: now) }
    }

    /// Every cookie in the jar, expired ones excepted, ordered by domain, then path.
    public var allCookies: [Cookie] {
        get async {
            await loaded()
            let now = clock()
            return state.withLockedValue { $0.storage.allCookies.filter { $0.expires.map { $0 > now } ?? true } }
        }
    }

    // MARK: Changing

    /// Stores the cookies of a response's `Set-Cookie` fields.
    ///
    /// Call it with every response head, redirects and interim failures included. Returns at once.
    /// - Parameters:
    ///   - fields: The response's header fields.
    ///   - url: The URL that answered (for a redirect, the URL redirected from).
    public func setCookies(from fields: HTTPFields, for url: URL) {
        let values = fields[values: .setCookie]
        guard !values.isEmpty else { return }
        setCookies(values, for: url)
    }

    /// Stores cookies from `Set-Cookie` field values. Returns at once.
    /// - Parameters:
    ///   - values: The field values, one cookie each.
    ///   - url: The URL that answered.
    public func setCookies(_ values: [String], for url: URL) {
        mutate { storage, now in storage.store(values, from: url, now: now) }
    }

    /// Removes the cookies of a name in a domain (any path). Returns at once.
    /// - Parameters:
    ///   - name: The cookie's name.
    ///   - domain: Its ``Cookie/domain`` (case-insensitive; a leading dot is ignored).
    public func remove(name: String, domain: String) {
        mutate { storage, _ in storage.remove(name: name, domain: domain) }
    }

    /// Removes every cookie, from memory and from the file. Returns at once.
    public func removeAll() {
        mutate { storage, _ in storage.removeAll() }
    }

    /// Waits until the file is read and every change made so far is written (returns at once for a
    /// jar in memory). For tests and before the process exits.
    public func waitUntilPersisted() async {
        guard let queue else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { continuation.resume() }
        }
    }
}
