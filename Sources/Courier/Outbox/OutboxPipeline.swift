import Foundation
import HTTPTypes

/// The identity of the request pipeline that froze an outbox row, and so the only one that may replay it.
///
/// Engines of one host share their data directory's outbox, but not their pipelines: an `auth` engine
/// without an authenticator must never send what an `api` engine with a token, a cookie jar and a retry
/// policy froze (it would go without its credentials, be refused and given up). A row names its engine's
/// origin and either the name the app gave the outbox (``NetworkEngine/Configuration/outboxName``: engines
/// with the same origin and name are declared equivalent) or, by default, the shape of the pipeline: the
/// types of its interceptors, whether it has a cookie jar and a credential provider, and the names (never
/// the values) of its default headers. It holds no secret.
///
/// A row without a pipeline (written by a version before pipelines) is replayed by any engine of its origin,
/// as it was then.
package struct OutboxPipeline: Sendable, Hashable {
    /// The engine's `scheme://host:port`.
    package let origin: String
    /// What the rows store: the origin, then `name:<name>` or `auto:<16 hex digits>`.
    package let identity: String
    /// Whether this pipeline replays every row of its origin (``NetworkEngine/Configuration/replaysEveryPipeline``).
    package private(set) var replaysEveryRow = false

    package init(origin: String, name: String) {
        self.init(origin: origin, identity: "\(origin) name:\(name)")
    }

    private init(origin: String, identity: String) {
        self.origin = origin
        self.identity = identity
    }

    init(origin: String, configuration: NetworkEngine.Configuration, defaultHeaders: HTTPFields) {
        if let name = configuration.outboxName {
            self.init(origin: origin, name: name)
        } else {
            let shape = Self.shape(of: configuration, defaultHeaders: defaultHeaders)
            self.init(origin: origin, identity: "\(origin) auto:\(Digests.sha256Hex(of: shape).prefix(16))")
        }
        replaysEveryRow = configuration.replaysEveryPipeline
    }

    /// What makes two engines' pipelines send the same request differently, as text; stable across runs.
    static func shape(of configuration: NetworkEngine.Configuration, defaultHeaders: HTTPFields) -> String {
        let interceptors = configuration.interceptors.map { String(reflecting: type(of: $0)) }
        let headerNames = Set(defaultHeaders.map { $0.name.canonicalName }).sorted()
        return [
            "interceptors=" + interceptors.joined(separator: ","),
            "cookieJar=\(configuration.cookieJar != nil)",
            "credentialProvider=\(configuration.credentialProvider != nil)",
            "headers=" + headerNames.joined(separator: ","),
        ].joined(separator: "\n")
    }
}
