import HTTPTypes

/// What an operation needs from the engine that built it: one shared, immutable object per engine (and
/// per replay's connectivity), so an operation holds a reference, not a copy of the configuration.
final class OperationContext: Sendable {
    let engineID: UInt64
    let queue: NetworkQueue
    let executor: RequestExecutor
    let configuration: NetworkEngine.Configuration
    let connectivity: EngineConnectivity
    /// The engine's default headers (a replay after a restart takes its sensitive ones from here).
    let defaultHeaders: HTTPFields
    /// The engine's sensitive names, lowercased, computed once (not per request).
    let sensitiveNames: Set<String>
    /// The engine's event monitors, or `nil` when it has none (every hook checks this first).
    let monitors: EventMonitorHub?
    /// Who runs this engine's flights, part of every coalescing key: fixed for the engine, so computed
    /// once (finding whether the transport is an object takes a dynamic cast).
    let runner: CoalescingKey.Runner
    /// The engine's trust, HTTP versions, proxies and pool settings, boxed once for every request's options.
    let connection: ConnectionSettings
    /// The engine's interceptors with its cookie jar last (``NetworkEngine/Configuration/pipeline(adding:)``),
    /// built once: asking the configuration copies all of it for each request.
    let pipeline: [any RequestInterceptor]

    init(
        engineID: UInt64, queue: NetworkQueue, executor: RequestExecutor, configuration: NetworkEngine.Configuration,
        connectivity: EngineConnectivity, defaultHeaders: HTTPFields = [:], monitors: EventMonitorHub? = nil
    ) {
        self.engineID = engineID
        self.queue = queue
        self.executor = executor
        self.configuration = configuration
        self.connectivity = connectivity
        self.defaultHeaders = defaultHeaders
        self.sensitiveNames = configuration.lowercasedSensitiveNames
        self.pipeline = configuration.pipeline()
        self.connection = .make(
            trust: configuration.trust, httpVersions: configuration.httpVersions, proxy: configuration.proxy, pool: configuration.connectionPool)
        let monitors = monitors ?? EventMonitorHub.make(configuration.eventMonitors)
        self.monitors = monitors
        let transport = executor.transport
        self.runner = CoalescingKey.Runner(
            group: connectivity.group,
            transport: type(of: transport) is AnyClass ? .object(ObjectIdentifier(transport as AnyObject)) : .engine(engineID),
            credentialsOf: configuration.credentialProvider == nil ? nil : engineID,
            interceptorsOf: configuration.hasPipeline ? engineID : nil,
            monitorsOf: monitors == nil ? nil : engineID)
    }

    /// An operation's pipeline: the engine's interceptors, the operation's own (`own`), then the cookie jar.
    /// Without interceptors of its own (the common case), the engine's, built once.
    func pipeline(adding own: [any RequestInterceptor]) -> [any RequestInterceptor] {
        own.isEmpty ? pipeline : configuration.pipeline(adding: own)
    }

    /// The engine's sensitive names and those of the provider's `credentials`: the fields that carry
    /// credentials for one request.
    func sensitiveNames(with credentials: HTTPFields) -> Set<String> {
        credentials.isEmpty ? sensitiveNames : sensitiveNames.union(credentials.map(\.name.canonicalName))
    }
}
