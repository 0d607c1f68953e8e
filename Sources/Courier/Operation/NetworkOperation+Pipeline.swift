import Foundation
import HTTPTypes

extension NetworkOperation {
    /// Adds interceptors of this operation's own; they run after the engine's
    /// (``NetworkEngine/Configuration/interceptors``), in the order added. Ignored once the operation
    /// is enqueued.
    ///
    /// An operation with interceptors of its own never shares a request with identical operations
    /// (coalescing): its interceptors might change the request, or retry it, differently.
    /// ```swift
    /// let op = engine.operation(path: "/upload", method: .put)
    ///     .intercepted(by: RetryPolicy(maximumAttempts: 5))
    /// ```
    /// - Parameter interceptors: The interceptors to add.
    /// - Returns: The operation, for chaining.
    @discardableResult
    public func intercepted(by interceptors: any RequestInterceptor...) -> Self {
        storage.withLockedValue { storage in
            guard storage.machine.state == .ready else { return }
            storage.interceptors += interceptors
        }
        return self
    }

    /// Whether the operation has interceptors of its own.
    var hasOwnInterceptors: Bool { storage.withLockedValue { !$0.interceptors.isEmpty } }

    /// What the interceptors declare they would add for `url` now (``RequestInterceptor/cacheCredentials(for:)``),
    /// merged; asked outside any lock.
    func interceptorCacheCredentials(for url: URL) -> HTTPFields {
        let interceptors = context.pipeline(adding: storage.withLockedValue { $0.interceptors })
        var fields = HTTPFields()
        if interceptors.isEmpty { return fields }
        for interceptor in interceptors { fields = fields.replacing(with: interceptor.cacheCredentials(for: url)) }
        return fields
    }

    /// Whether the request as sent carried credentials (sensitive fields) that neither the operation's
    /// own headers, its engine's credential provider nor an interceptor's declaration account for.
    static func carriesUndeclaredCredentials(adapted: HTTPFields, known: HTTPFields, names: Set<String>) -> Bool {
        let lowercased = Set(names.map { $0.lowercased() })
        func sensitive(_ fields: HTTPFields) -> Set<String> {
            Set(fields.map { $0.name.canonicalName.lowercased() }.filter { lowercased.contains($0) })
        }
        return !sensitive(adapted).subtracting(sensitive(known)).isEmpty
    }
}
