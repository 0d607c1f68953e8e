public import Foundation
public import HTTPTypes
import Synchronization

/// One engine per API host: it composes URLs, carries default headers and configuration, and builds
/// operations that run on the shared ``NetworkQueue``.
///
/// Wrap an engine in a type of your own whose methods return model values, so callers never see
/// URLs, headers or JSON keys (MKNetworkKit's `CurrencyEngine`):
/// ```swift
/// struct CurrencyEngine {
///     let engine = NetworkEngine(host: "api.example.com", apiPath: "v1", headers: ["x-client-identifier": "iOS"])
///
///     func rates(base: String) async throws -> [String: Double] {
///         let op = engine.operation(path: "rates", params: ["base": .string(base)])
///         return try await engine.send(op, decoding: RatesPayload.self).rates
///     }
/// }
/// ```
/// Building an operation never throws: bad input (an invalid URL or header) makes the operation
/// fail with a typed ``NetworkError`` when it is enqueued, before anything is sent.
public final class NetworkEngine: Sendable {
    /// The engine's configuration.
    public let configuration: Configuration
    /// The queue the engine's operations run on.
    public let queue: NetworkQueue
    /// The headers sent with every request: `User-Agent`, `Accept-Language`, then the engine's own.
    public let defaultHeaders: HTTPFields
    /// ``defaultHeaders`` without its credentials: what a request to another origin gets (computed once).
    private let foreignDefaultHeaders: HTTPFields
    /// The engine's origin, parsed once (every operation built from a URL is compared with it).
    private let origin: Origin?

    private let composer: Result<URLComposer, NetworkError>
    private let headerError: NetworkError?
    /// Unique among the process's engines, never reused (image caches partition by it).
    package let id: UInt64
    let context: OperationContext

    private static let counter = Atomic<UInt64>(1)

    /// Creates an engine for a host, MKNetworkKit style.
    ///
    /// - Parameters:
    ///   - host: The host name or IP address (`api.example.com`, `127.0.0.1`, `[::1]`).
    ///   - port: The port, if not the scheme's default.
    ///   - apiPath: A path prefix for every operation (`"v1"` or `"/api/v2/"`: slashes do not matter).
    ///   - isSecure: `true` (the default) for https, `false` for http.
    ///   - headers: Header fields sent with every request (for example `x-client-identifier: iOS`).
    ///   - configuration: Timeouts, limits, redirects, validation.
    ///   - queue: The queue to run on; ``NetworkQueue/shared`` by default.
    ///   - transport: The transport; ``AsyncHTTPClientTransport/shared`` by default.
    public convenience init(
        host: String,
        port: Int? = nil,
        apiPath: String? = nil,
        isSecure: Bool = true,
        headers: [String: String] = [:],
        configuration: Configuration = Configuration(),
        queue: NetworkQueue = .shared,
        transport: any HTTPTransport = AsyncHTTPClientTransport.shared
    ) {
        let composer = URLComposer(scheme: isSecure ? "https" : "http", host: host, port: port, apiPath: apiPath)
        self.init(composer: .success(composer), headers: headers, configuration: configuration, queue: queue, transport: transport)
    }

    /// Creates an engine whose operations' paths are relative to a base URL such as
    /// `https://api.example.com:8443/v1`.
    ///
    /// - Parameters:
    ///   - baseURL: An http or https URL with a host and an optional path prefix, no query.
    ///     If it is not one, every operation fails with ``NetworkError/Code/invalidURL``.
    ///   - headers: Header fields sent with every request.
    ///   - configuration: Timeouts, limits, redirects, validation.
    ///   - queue: The queue to run on; ``NetworkQueue/shared`` by default.
    ///   - transport: The transport; ``AsyncHTTPClientTransport/shared`` by default.
    public convenience init(
        baseURL: String,
        headers: [String: String] = [:],
        configuration: Configuration = Configuration(),
        queue: NetworkQueue = .shared,
        transport: any HTTPTransport = AsyncHTTPClientTransport.shared
    ) {
        let composer: Result<URLComposer, NetworkError> = URLComposer(baseURL: baseURL).map { .success($0) }
            ?? .failure(NetworkError(.invalidURL, "the base URL must be an http(s) URL with a host and no query", url: baseURL))
        self.init(composer: composer, headers: headers, configuration: configuration, queue: queue, transport: transport)
    }

    private init(
        composer: Result<URLComposer, NetworkError>,
        headers: [String: String],
        configuration: Configuration,
        queue: NetworkQueue,
        transport: any HTTPTransport
    ) {
        // A client certificate goes to the engine's own host unless the policy names the hosts.
        let configuration = Self.presentingIdentity(configuration, toHostOf: composer)
        self.composer = composer
        self.configuration = configuration
        self.queue = queue
        self.id = Self.counter.wrappingAdd(1, ordering: .relaxed).oldValue
        var fields = HTTPFields()
        var headerError: NetworkError?
        let defaults = [("User-Agent", configuration.userAgent), ("Accept-Language", configuration.acceptLanguage)]
            .compactMap { name, value in value.map { (name, $0) } }
        for (name, value) in defaults + headers.sorted(by: { $0.key < $1.key }) {
            switch HeaderValidation.field(name: name, value: value) {
            case .success(let field): fields[field.name] = field.value
            case .failure(let error): headerError = headerError ?? error
            }
        }
        self.defaultHeaders = fields
        let sensitive = Set(configuration.sensitiveHeaderNames.map { $0.lowercased() }).union(CredentialFields.names)
        self.foreignDefaultHeaders = SensitiveHeaders.removed(sensitive, from: fields)
        self.headerError = headerError
        let baseURL = (try? composer.get()).flatMap { URL(string: $0.baseURLString) }
        self.origin = baseURL.flatMap(Origin.init)
        let connectivity = EngineConnectivity(
            engineID: id, queue: queue, baseURL: baseURL, configuration: configuration, defaultHeaders: fields)
        let executor = RequestExecutor(transport: transport)
        // One hub for the engine's operations and its replays: one serial queue of monitor calls.
        let monitors = EventMonitorHub.make(configuration.eventMonitors)
        let context = OperationContext(
            engineID: id, queue: queue, executor: executor, configuration: configuration, connectivity: connectivity,
            defaultHeaders: fields, monitors: monitors)
        self.context = context
        // Replays are built with the connectivity they are handed (it keeps no reference to itself), so
        // it goes away once neither the engine nor any of its operations needs it.
        let (engineID, engineDefaults) = (id, fields)
        connectivity.start { record, connectivity in
            NetworkOperation.replay(of: record, context: OperationContext(
                engineID: engineID, queue: queue, executor: executor, configuration: configuration, connectivity: connectivity,
                defaultHeaders: engineDefaults, monitors: monitors))
        }
    }

    /// `configuration` with its client certificate's hosts set to the engine's host when it names none.
    private static func presentingIdentity(_ configuration: Configuration, toHostOf composer: Result<URLComposer, NetworkError>) -> Configuration {
        guard configuration.trust.clientIdentity != nil, configuration.trust.identityHosts.isEmpty,
            let host = (try? composer.get()).flatMap({ URL(string: $0.baseURLString)?.host })
        else { return configuration }
        var configuration = configuration
        configuration.trust.identityHosts = [host]
        return configuration
    }

    /// The engine's base URL (`scheme://host[:port][/apiPath]`), or `nil` when the host or base URL is invalid.
    public var baseURL: String? { try? composer.get().baseURLString }

    // MARK: Building operations

    /// Builds an operation for a path under the engine's host and API path.
    ///
    /// Parameters go to the query string for GET, HEAD and DELETE (and whenever `body` is given),
    /// and to a form-encoded body otherwise.
    /// - Parameters:
    ///   - path: The path below the API path; `""` or `"/"` is the API root. It may carry a query.
    ///   - params: Parameters, encoded as AFNetworking does (sorted keys, `a[b]=v`, `a[]=v`, booleans `1`/`0`).
    ///   - method: The method; GET by default.
    ///   - body: The body, if any.
    /// - Returns: A new operation, not yet enqueued.
    public func operation(
        path: String, params: [String: ParameterValue] = [:], method: HTTPRequest.Method = .get, body: RequestBody? = nil
    ) -> NetworkOperation {
        let url = composer.flatMap { composer in
            composer.url(path: path).mapError { NetworkError(.invalidURL, $0.reason, url: path) }
        }
        return makeOperation(url: url, fallback: path, params: params, method: method, body: body)
    }

    /// Builds an operation for an absolute URL (an image on a CDN, a link from a response).
    ///
    /// Credentials in the URL (`https://user:password@host/`) become an `Authorization: Basic` field, as
    /// curl and browsers send them, and leave the URL: the operation's URL, what the outbox keeps and what
    /// logs show never hold the password (the field, like every credential, is masked in logs, dropped on
    /// a redirect to another origin and not written to the outbox).
    /// - Parameters:
    ///   - url: An absolute http or https URL.
    ///   - params: Parameters, as for ``operation(path:params:method:body:)``.
    ///   - method: The method; GET by default.
    ///   - body: The body, if any.
    /// - Returns: A new operation, not yet enqueued.
    public func operation(
        url: String, params: [String: ParameterValue] = [:], method: HTTPRequest.Method = .get, body: RequestBody? = nil
    ) -> NetworkOperation {
        let valid: Result<String, NetworkError>
        var credentials: PasswordCredentials?
        var target: URL?
        if let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
            parsed.host?.isEmpty == false
        {
            credentials = PasswordCredentials(userInfoOf: parsed)
            if credentials != nil, var components = URLComponents(url: parsed, resolvingAgainstBaseURL: false) {
                components.user = nil
                components.password = nil
                valid = .success(components.string ?? url)
                target = components.string.flatMap(URL.init(string:))
            } else {
                valid = .success(url)
                target = parsed
            }
        } else {
            valid = .failure(NetworkError(.invalidURL, "not an absolute http(s) URL", url: url))
        }
        // Parsed once: the headers and the operation use the same URL.
        let operation = makeOperation(
            url: valid, fallback: (try? valid.get()) ?? url, params: params, method: method, body: body,
            headers: defaultHeaders(for: target), parsed: target)
        if let credentials {
            do {
                operation.setHeader(try BasicAuthentication.authorization(for: credentials), forName: "Authorization")
            } catch {
                operation.failInput(error)
            }
        }
        return operation
    }

    /// Builds an operation for an absolute URL given as a `URL` (``NetworkResponse/links``' values, a
    /// `Location` you read), as the form that takes a `String` does.
    /// ```swift
    /// if let next = response.links["next"] { page = try await engine.send(engine.operation(url: next)) }
    /// ```
    /// - Parameters:
    ///   - url: An absolute http or https URL.
    ///   - params: Parameters, as for ``operation(path:params:method:body:)``.
    ///   - method: The method; GET by default.
    ///   - body: The body, if any.
    /// - Returns: A new operation, not yet enqueued.
    public func operation(
        url: URL, params: [String: ParameterValue] = [:], method: HTTPRequest.Method = .get, body: RequestBody? = nil
    ) -> NetworkOperation {
        operation(url: url.absoluteString, params: params, method: method, body: body)
    }

    /// The default headers for a request to `url`: all of them on the engine's origin; elsewhere, all but
    /// the credentials among them (``Configuration/sensitiveHeaderNames``: an `X-API-Key` goes to the
    /// engine's API only, as a redirect to another origin would drop it too).
    private func defaultHeaders(for url: URL?) -> HTTPFields {
        guard let url else { return defaultHeaders }   // an invalid URL: the operation fails before sending
        guard let origin, Origin(url) == origin else { return foreignDefaultHeaders }
        return defaultHeaders
    }

    private func makeOperation(
        url: Result<String, NetworkError>, fallback: String, params: [String: ParameterValue],
        method: HTTPRequest.Method, body: RequestBody?, headers: HTTPFields? = nil, parsed: URL? = nil
    ) -> NetworkOperation {
        var body = body
        var url = url
        if !params.isEmpty {
            if body != nil || method == .get || method == .head || method == .delete {
                url = url.map { FormEncoder.appendQuery(FormEncoder.encode(params), to: $0) }
            } else {
                body = .form(params)
            }
        }
        let urlString = (try? url.get()) ?? fallback
        // A URL the caller already parsed is reused when parameters did not change it.
        let known = params.isEmpty ? parsed : nil
        let parsed = url.flatMap { string in
            (known ?? URL(string: string)).map { .success($0) } ?? .failure(NetworkError(.invalidURL, "not a valid URL", url: string))
        }
        return NetworkOperation(
            method: method, url: parsed, urlString: urlString, headers: headers ?? defaultHeaders, body: body,
            context: context, inputError: headerError)
    }

    // MARK: Running operations

    /// Puts an operation on the queue. Enqueueing twice does nothing; an operation with bad input
    /// fails at once with its typed error, without touching the network.
    /// - Parameter operation: The operation.
    public func enqueue(_ operation: NetworkOperation) {
        operation.submit()
    }

    /// Enqueues an operation and waits for its response.
    /// - Parameter operation: The operation.
    /// - Returns: The response.
    /// - Throws: ``NetworkError``.
    @discardableResult
    public func send(_ operation: NetworkOperation) async throws(NetworkError) -> NetworkResponse {
        operation.submit()
        return try await operation.response()
    }

    /// Enqueues an operation, waits for its response and decodes the JSON body.
    /// - Parameters:
    ///   - operation: The operation.
    ///   - type: The type to decode.
    ///   - decoder: The decoder; a default `JSONDecoder` when omitted.
    /// - Returns: The decoded value.
    /// - Throws: ``NetworkError``, with ``NetworkError/Code/decodingFailed`` when the body does not decode.
    public func send<T: Decodable>(
        _ operation: NetworkOperation, decoding type: T.Type, decoder: JSONDecoder = JSONDecoder()
    ) async throws(NetworkError) -> T {
        try await send(operation).decode(type, decoder: decoder)
    }

    /// Cancels every operation this engine built that is still in its queue.
    public func cancelAllOperations() {
        let id = self.id
        queue.cancelOperations { $0.context.engineID == id }
    }
}
