public import Dispatch
public import Foundation
public import HTTPTypes
public import Logging

extension NetworkEngine {
    /// Everything about how an engine's operations behave on the wire.
    ///
    /// ```swift
    /// let engine = NetworkEngine(host: "api.example.com", apiPath: "v2", configuration: .init {
    ///     $0.timeouts.read = .seconds(20)
    ///     $0.acceptableContentTypes = ["application/json"]
    /// })
    /// ```
    public struct Configuration: Sendable {
        /// Connect, read and total timeouts.
        public var timeouts = Timeouts()
        /// The largest response body held in memory (after decompression); a larger one fails with
        /// ``NetworkError/Code/bodyTooLarge``. 64 MiB by default.
        public var maximumResponseBodySize = 64 * 1024 * 1024
        /// Transparent gzip, deflate and (with libbrotli installed) brotli decompression with a ratio limit;
        /// on (ratio 100) by default.
        public var decompression = Decompression.enabled(maximumRatio: 100)
        /// How redirects are followed; up to 10, never https to http, by default.
        public var redirects = RedirectPolicy.follow()
        /// Which servers are trusted over TLS (extra or only roots, public-key pins, a client certificate
        /// for mutual TLS); what the system trusts by default. See ``TrustPolicy``.
        public var trust = TrustPolicy.system
        /// Whether HTTP/2 may be negotiated with https servers (``HTTPVersions/automatic``, the default)
        /// or only HTTP/1.1 is spoken.
        public var httpVersions = HTTPVersions.automatic
        /// The proxies requests go through (an HTTP `CONNECT` proxy with Basic credentials, or SOCKS5), and
        /// the hosts reached directly; none by default. ``ProxySettings/fromEnvironment(_:)`` reads
        /// `https_proxy`, `NO_PROXY` and the rest, as curl does.
        public var proxy = ProxySettings.none
        /// How the connections to the engine's hosts are pooled: the most open to one host at once, and
        /// how long an unused one stays open (60 s). Engines with equal connection settings share one pool
        /// (see ``ConnectionPoolSettings``); the queue's width still limits how many requests run.
        public var connectionPool = ConnectionPoolSettings.standard
        /// Status codes that count as success; others fail with ``NetworkError/Code/unacceptableStatus``. 200..<300 by default.
        public var acceptableStatusCodes = Set(200..<300)
        /// Media types (`type/subtype`, or `type/*`) a non-empty body may have; `nil` (the default) accepts any.
        public var acceptableContentTypes: Set<String>?
        /// Whether identical GET and HEAD operations share one request by default. On by default.
        public var coalescesRequests = true
        /// The queue closure handlers are called on, in order for each operation. A shared serial
        /// queue by default; pass `.main` to update UI directly.
        public var callbackQueue: DispatchQueue = .courierCallbacks
        /// The `User-Agent` sent with every request; `Courier/<version> (<OS>)` by default, `nil` for none.
        public var userAgent: String? = DefaultHeaders.userAgent(version: CourierLibrary.version)
        /// The `Accept-Language` sent with every request; built from the user's preferred languages by
        /// default, `nil` for none. A server that answers with `Vary: Accept-Language` stores one response per
        /// value, so an API whose content does not depend on the language is better served without it.
        public var acceptLanguage: String? = DefaultHeaders.acceptLanguage
        /// The HTTP cache, shared by the engines given it; `nil` (the default) means no caching.
        public var cache: ResponseCache?
        /// How operations use ``cache`` unless they set their own; the HTTP rules by default.
        public var cachePolicy = CachePolicy.useProtocol
        /// The name of the user whose credentials a request carries, for the cache's partition: asked for
        /// each request that carries credentials (an `Authorization`, a cookie, any of
        /// ``sensitiveHeaderNames``), with its URL. `nil` (the default), or a `nil` answer: responses are
        /// partitioned by the credentials themselves, so a refreshed bearer token starts a cold cache.
        /// Give the signed-in user's id and a token refresh keeps the user's entries, while another user
        /// (another id) never sees them. Only a keyed hash of the name is stored, never the name.
        /// ```swift
        /// configuration.cachePartitionName = { _ in session.userID }
        /// ```
        /// Return the same name only for credentials of the same user: requests with credentials and a
        /// name share their entries whatever the credentials say.
        public var cachePartitionName: (@Sendable (URL) -> String?)?
        /// Whether a network failure (or a 500, 502, 503, 504) is answered with the stored response, marked
        /// as cached and stale (ASIHTTPRequest's fallback). Off by default; `stale-if-error` applies regardless. Never
        /// where the response's or the request's directives forbid a stale answer (see ``servesStaleWhenDisconnected``).
        public var fallsBackToCacheOnError = false
        /// Whether a stored response, even stale, answers a request whose host cannot be reached (no
        /// route, connection refused, name not resolved), as MKNetworkKit showed cached data offline
        /// (RFC 9111 §4.2.4 allows it). On by default; the answer is marked
        /// ``NetworkResponse/isCachedResponse`` with ``CacheOutcome/stale``. Never where the response
        /// forbids it (`no-cache`, `must-revalidate`, an expired `stale-if-error` window) or the request
        /// refuses it (`no-cache`, `max-age`, `min-fresh`, `max-stale`). Operations can override it
        /// (``NetworkOperation/servesStaleWhenDisconnected``).
        public var servesStaleWhenDisconnected = true
        /// Where the engine logs: debug and trace, and one error when a damaged outbox is set aside (requests
        /// the user asked to keep may be lost). Silent by default.
        public var logger: Logger = .courierSilent
        /// How the engine learns whether its host can be reached. `nil` (the default): the engine watches
        /// its host with ``SystemReachability``. Give a ``ManualReachability`` to drive it yourself.
        public var reachability: (any Reachability)?
        /// How many of the engine's requests may run at once over each kind of link (Wi-Fi and wired 6,
        /// cellular 2). The shared queue never runs more than the narrowest limit among the engines
        /// whose work is waiting.
        public var concurrency = ConnectionConcurrency()
        /// Send nothing over cellular: while the link is cellular the engine's work waits (width 0) and
        /// goes when Wi-Fi or a wired link comes.
        public var wifiOnlyMode = false
        /// Where the engine's outbox of frozen requests lives: an SQLite database in
        /// ``Outbox/defaultDirectory`` by default, or a server many instances share (`CourierPostgres`);
        /// `nil` for no outbox (freezable operations then fail like the others).
        public var outbox: OutboxLocation? = .sqlite(directory: Outbox.defaultDirectory)
        /// The data directory of the engine's SQLite outbox (``outbox``): setting it makes the outbox an
        /// SQLite one there, `nil` none at all; `nil` too when the outbox is on a server.
        public var dataDirectory: URL? {
            get { outbox?.directory }
            set { outbox = newValue.map { .sqlite(directory: $0) } }
        }
        /// Credentials added to every request the engine sends, replays of frozen requests included
        /// (credentials are never written to the outbox, so this is how a replay after a restart gets them
        /// back). Called with the request's URL just before the request goes out (not when it is
        /// enqueued: a token refreshed meanwhile is the one sent), and when the cache is looked up, to
        /// find the responses stored for these credentials. Its field names count as
        /// ``sensitiveHeaderNames`` for that request.
        ///
        /// Kept as a convenience beside ``interceptors``: it runs first, synchronously, and its fields also
        /// select the cache's entries for these credentials, which an interceptor's do not.
        public var credentialProvider: (@Sendable (URL) -> HTTPFields)?
        /// The engine's request pipeline, in order: each adapts every request the engine sends (every
        /// attempt, redirect hop and outbox replay) and may retry failed attempts. See
        /// ``RequestInterceptor``; Courier ships ``RetryPolicy``, ``BearerTokenAuthenticator``,
        /// ``BasicAuthenticator`` and ``DigestAuthenticator``.
        /// ```swift
        /// configuration.interceptors = [RetryPolicy(), BearerTokenAuthenticator(token: saved) { try await refresh() }]
        /// ```
        public var interceptors: [any RequestInterceptor] = []
        /// Observers of everything that happens to the engine's operations (enqueued, started, redirected,
        /// retried, answered from the cache, frozen, finished with timings), called in this order for each
        /// event, off the caller's thread and never under a lock. Empty by default, which costs nothing.
        /// See ``EventMonitor``; Courier ships ``LoggingEventMonitor``.
        /// ```swift
        /// configuration.eventMonitors = [LoggingEventMonitor(logger: Logger(label: "api"))]
        /// ```
        public var eventMonitors: [any EventMonitor] = []
        /// The cookie jar the engine sends cookies from and stores them in (RFC 6265), or `nil` (the
        /// default) for none. Several engines may share one jar. It runs before ``interceptors``.
        public var cookieJar: CookieJar?
        /// Names of request header fields that carry credentials (case does not matter). They partition the
        /// cache (one user's responses are never served to another), are dropped when a redirect leads to
        /// another origin, are never written to the outbox and are masked in ``NetworkOperation/curlCommand``.
        /// `Authorization`, `Proxy-Authorization` and `Cookie` always count; by default `X-API-Key`,
        /// `X-Auth-Token` and `X-Access-Token` too. Add your API's own:
        /// ```swift
        /// configuration.sensitiveHeaderNames.insert("X-Session")
        /// ```
        public var sensitiveHeaderNames: Set<String> = SensitiveHeaders.defaultNames
        /// Names of query items and body fields (form or JSON, at any depth; lowercase) whose values
        /// ``NetworkOperation/curlCommand`` masks: `password`, `secret`, `token`, `access_token`, `api_key`,
        /// `key`, `signature` and similar by default. Logs never show a query at all.
        public var sensitiveParameterNames: Set<String> = SensitiveParameters.defaultNames
        /// How frozen requests are retried.
        public var outboxRetry = OutboxRetry()
        /// The largest body a frozen request may have, in bytes: 100 MiB by default. A freezable request
        /// with a larger body is not frozen when it cannot be sent: it fails with
        /// ``NetworkError/Code/frozenBodyTooLarge`` (the network error that made it freeze is its
        /// ``NetworkError/underlying``). A file body, and the files of a multipart form, are copied into
        /// the outbox when the request is frozen (so the original may change or go away), and count with
        /// their size; for a form, the whole encoded body counts. Sending it while the host is reachable
        /// is not limited by this.
        public var maximumFrozenBodySize = 100 * 1024 * 1024
        /// The largest body a download to files (``NetworkOperation/download(to:resumable:)-([URL],_)``)
        /// may write, in bytes; `nil` (the default) for no limit. ``maximumResponseBodySize`` limits
        /// bodies held in memory only. A body declared larger is refused before anything is written, and
        /// one that grows past the limit stops there; both fail with ``NetworkError/Code/bodyTooLarge``
        /// and leave nothing on disk, not even a partial file to resume.
        public var maximumDownloadSize: Int64?
        /// Whether freezable operations also freeze when their first attempt is answered `503` or `429`
        /// (see ``NetworkOperation/freezesWhenServerUnavailable``). Off by default: an answer is an answer.
        public var freezesWhenServerUnavailable = false
        /// Whether the engine replays its host's frozen requests by itself (when its host becomes reachable,
        /// when something is frozen, and at start-up if the outbox holds some). On by default; a command-line
        /// tool that only freezes turns it off and replays with ``NetworkEngine/flushOutbox()``.
        public var replaysOutbox = true
        /// The name of the pipeline this engine freezes requests for, in its data directory's outbox. A
        /// frozen request is replayed only by an engine of the same origin whose pipeline froze it, never
        /// by another engine of its host with other interceptors or credentials. `nil` (the default): the
        /// pipeline is named by its shape (the types of its ``interceptors``, whether it has a
        /// ``cookieJar`` and a ``credentialProvider``, the names of its default headers), so two engines
        /// made alike replay each other's requests, and an engine whose pipeline changes (an app update
        /// that adds an interceptor) no longer replays what the old one froze. Name it to declare engines
        /// equivalent, and to keep replaying across such changes:
        /// ```swift
        /// let api = NetworkEngine(host: "api.example.com", configuration: .init {
        ///     $0.outboxName = "api"
        ///     $0.interceptors = [RetryPolicy(), authenticator]
        /// })
        /// ```
        /// Requests frozen by earlier versions of Courier (before pipelines) are replayed by any engine of
        /// their origin.
        ///
        /// A frozen request holds no credentials: it is replayed with the credentials of the engine that
        /// replays it. Where users sign in and out, name the outbox per user (`"api-\(userID)"`) so that
        /// one user's frozen requests are never sent with another's credentials.
        public var outboxName: String?
        /// Whether the engine replays every frozen request of its origin, whatever pipeline froze it: for
        /// an operator's tool that is given the credentials explicitly (`courier outbox flush -H …`), never
        /// for an app's engine. Package access only.
        package var replaysEveryPipeline = false

        /// The defaults.
        public init() {}

        /// ``sensitiveHeaderNames`` lowercased, with the standard credential fields always in.
        var lowercasedSensitiveNames: Set<String> {
            Set(sensitiveHeaderNames.map { $0.lowercased() }).union(CredentialFields.names)
        }

        /// The defaults, adjusted by `configure` (which may throw: a ``CertificatePin`` is made with `try`).
        /// - Parameter configure: Changes to make to the defaults.
        public init(_ configure: (inout Configuration) throws -> Void) rethrows {
            try configure(&self)
        }
    }

    /// Connect, read and total timeouts.
    public struct Timeouts: Sendable, Hashable {
        /// How long establishing a connection may take; 10 s by default.
        public var connect: Duration = .seconds(10)
        /// How long the server may stay silent while a response is awaited or read; 60 s by default.
        public var read: Duration = .seconds(60)
        /// How long a whole operation may take, from its first attempt: redirects, retries, their waits
        /// and a token refresh included; no limit by default. When it runs out the operation fails with
        /// ``NetworkError/Code/timeout``.
        public var total: Duration?

        /// Creates timeouts.
        /// - Parameters:
        ///   - connect: The connect timeout.
        ///   - read: The read timeout.
        ///   - total: The total timeout, if any.
        public init(connect: Duration = .seconds(10), read: Duration = .seconds(60), total: Duration? = nil) {
            self.connect = connect
            self.read = read
            self.total = total
        }
    }
}

/// How many of an engine's requests may run at once over each kind of link.
public struct ConnectionConcurrency: Sendable, Hashable {
    /// Over Wi-Fi; 6 by default.
    public var wifi = 6
    /// Over a wired link; 6 by default.
    public var wired = 6
    /// Over cellular; 2 by default (0 while ``NetworkEngine/Configuration/wifiOnlyMode`` is on).
    public var cellular = 2
    /// Over a link of unknown kind (loopback included); 6 by default.
    public var other = 6

    /// Creates limits.
    /// - Parameters:
    ///   - wifi: Over Wi-Fi.
    ///   - wired: Over a wired link.
    ///   - cellular: Over cellular.
    ///   - other: Over any other link.
    public init(wifi: Int = 6, wired: Int = 6, cellular: Int = 2, other: Int = 6) {
        self.wifi = wifi
        self.wired = wired
        self.cellular = cellular
        self.other = other
    }

    /// The limit for a status: 0 while unreachable, or over cellular in Wi-Fi-only mode.
    /// - Parameters:
    ///   - status: The host's reachability.
    ///   - wifiOnlyMode: Whether cellular is off limits.
    /// - Returns: How many requests may run at once.
    public func limit(for status: ReachabilityStatus, wifiOnlyMode: Bool) -> Int {
        switch status {
        case .unreachable: 0
        case .reachable(.wifi): wifi
        case .reachable(.wired): wired
        case .reachable(.cellular): wifiOnlyMode ? 0 : cellular
        case .reachable(.other): other
        }
    }
}

/// How frozen requests are retried: exponential backoff with jitter, never sooner than the server's
/// `Retry-After`, and when they are given up.
///
/// A request is given up (dead-lettered: kept in the outbox, visible in ``Outbox/deadLetters``, its
/// operation failed with ``NetworkError/Code/deadLettered``) after ``maximumAttempts`` attempts that
/// reached the server or ``timeToLive`` in the outbox, whichever comes first, so that one request the
/// server keeps refusing does not hold back the ones behind it forever. An operation's own
/// ``NetworkOperation/maximumAttempts`` and ``NetworkOperation/timeToLive`` take precedence.
public struct OutboxRetry: Sendable, Hashable {
    /// The delay before the second attempt (before jitter); 1 s by default. It doubles each time.
    public var initialDelay: Duration = .seconds(1)
    /// The longest delay; 5 minutes by default.
    public var maximumDelay: Duration = .seconds(300)
    /// How long a replay holds its claim on a row before another engine or process may take it over
    /// (a crashed process's claims are taken over at once); 2 minutes by default.
    public var lease: Duration = .seconds(120)
    /// How many attempts that reach the server a frozen request gets (attempts that could not connect
    /// do not count, nor those whose frozen body the outbox could not read back: the server got at most
    /// part of the body, which it cannot act on); 10 by default, about ten minutes of a server that keeps
    /// failing with the default delays. `nil`: no limit.
    public var maximumAttempts: Int? = 10
    /// How long a frozen request may wait in the outbox; 7 days by default. `nil`: no limit.
    public var timeToLive: Duration? = .seconds(7 * 86_400)
    /// How many ordering keys one engine replays at once (the requests of one key always go one at a
    /// time, in order); 6 by default, at least 1. An engine claims no more rows than this, so instances
    /// sharing a PostgreSQL outbox share its keys instead of one claiming them all.
    public var parallelLanes: Int = 6

    /// Creates a retry policy.
    /// - Parameters:
    ///   - initialDelay: The delay before the second attempt.
    ///   - maximumDelay: The longest delay.
    ///   - lease: How long a replay's claim on a row lasts.
    ///   - maximumAttempts: Attempts that reach the server before a request is given up; `nil` for no limit.
    ///   - timeToLive: How long a request may wait before it is given up; `nil` for no limit.
    ///   - parallelLanes: How many ordering keys one engine replays at once.
    public init(
        initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(300), lease: Duration = .seconds(120),
        maximumAttempts: Int? = 10, timeToLive: Duration? = .seconds(7 * 86_400), parallelLanes: Int = 6
    ) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.lease = lease
        self.maximumAttempts = maximumAttempts.map { max(1, $0) }
        self.timeToLive = timeToLive
        self.parallelLanes = max(1, parallelLanes)
    }
}

/// Facts about the library itself.
public enum CourierLibrary {
    /// Courier's version, as sent in the default `User-Agent`.
    public static let version = "0.1.0"
}

extension DispatchQueue {
    /// The serial queue Courier calls closure handlers on unless an engine names another.
    public static let courierCallbacks = DispatchQueue(label: "courier.callbacks")
}
