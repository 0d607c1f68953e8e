import Foundation
public import HTTPTypes

/// Retries failed attempts with exponential backoff and full jitter: an interceptor that comes with
/// Courier.
///
/// By default it retries up to 3 attempts in all, within 60 seconds, only requests that are safe to
/// repeat (GET, HEAD, OPTIONS, PUT, DELETE, TRACE, or any request with an `Idempotency-Key` field), and
/// only when repeating can help: the connection could not be made or was lost, the request timed out,
/// or the server answered 408, 429, 500, 502, 503 or 504. A `Retry-After` field (seconds or an HTTP
/// date) sets the wait instead of the backoff; a wait longer than ``maximumRetryAfter``, or one that
/// would end past ``maximumTotalTime``, is not waited for: the failure is reported at once.
///
/// While it waits the operation holds none of the queue's slots; then it takes its old place in line.
/// An engine's total timeout (``NetworkEngine/Timeouts/total``) bounds the whole operation, attempts
/// and waits included (a wait that would end past it is not waited for); ``maximumTotalTime`` is this
/// policy's own limit.
/// ```swift
/// configuration.interceptors = [RetryPolicy(maximumAttempts: 5)]
/// ```
public struct RetryPolicy: RequestInterceptor {
    /// The most attempts, the first included (1: never retry).
    public var maximumAttempts: Int
    /// How long all attempts and waits may take, from the start of the first attempt.
    public var maximumTotalTime: Duration
    /// The wait between attempts when the server does not say.
    public var backoff: RetryBackoff
    /// The longest `Retry-After` honoured; a longer one is not waited for.
    public var maximumRetryAfter: Duration
    /// The statuses worth retrying.
    public var retryableStatusCodes: Set<Int>
    /// The error codes worth retrying.
    public var retryableErrorCodes: Set<NetworkError.Code>
    /// GET, HEAD, OPTIONS, PUT, DELETE and TRACE: the idempotent methods of RFC 9110 §9.2.2.
    public static let defaultIdempotentMethods: Set<HTTPRequest.Method> = [.get, .head, .options, .put, .delete, .trace]

    /// `Idempotency-Key`: a request that carries it may be sent again whatever its method.
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!

    /// The methods retried without an `Idempotency-Key`.
    public var idempotentMethods: Set<HTTPRequest.Method>
    /// The random numbers in `0..<1` the jitter uses (injectable for tests).
    let unit: @Sendable () -> Double

    /// Creates a policy.
    /// - Parameters:
    ///   - maximumAttempts: The most attempts, the first included; 3 by default.
    ///   - maximumTotalTime: How long all attempts and waits may take; 60 s by default.
    ///   - backoff: The wait between attempts when the server does not say.
    ///   - maximumRetryAfter: The longest `Retry-After` honoured; 60 s by default.
    ///   - retryableStatusCodes: 408, 429, 500, 502, 503 and 504 by default.
    ///   - retryableErrorCodes: Connection failures (``NetworkError/Code/cannotConnect``,
    ///     ``NetworkError/Code/connectionLost``) and ``NetworkError/Code/timeout`` by default.
    ///   - idempotentMethods: GET, HEAD, OPTIONS, PUT, DELETE and TRACE by default (RFC 9110 §9.2.2).
    public init(
        maximumAttempts: Int = 3,
        maximumTotalTime: Duration = .seconds(60),
        backoff: RetryBackoff = RetryBackoff(),
        maximumRetryAfter: Duration = .seconds(60),
        retryableStatusCodes: Set<Int> = [408, 429, 500, 502, 503, 504],
        retryableErrorCodes: Set<NetworkError.Code> = [.cannotConnect, .connectionLost, .timeout],
        idempotentMethods: Set<HTTPRequest.Method> = RetryPolicy.defaultIdempotentMethods
    ) {
        self.init(
            maximumAttempts: maximumAttempts, maximumTotalTime: maximumTotalTime, backoff: backoff,
            maximumRetryAfter: maximumRetryAfter, retryableStatusCodes: retryableStatusCodes,
            retryableErrorCodes: retryableErrorCodes, idempotentMethods: idempotentMethods,
            unit: { Double.random(in: 0..<1) })
    }

    init(
        maximumAttempts: Int, maximumTotalTime: Duration, backoff: RetryBackoff, maximumRetryAfter: Duration,
        retryableStatusCodes: Set<Int>, retryableErrorCodes: Set<NetworkError.Code>, idempotentMethods: Set<HTTPRequest.Method>,
        unit: @escaping @Sendable () -> Double
    ) {
        self.maximumAttempts = maximumAttempts
        self.maximumTotalTime = maximumTotalTime
        self.backoff = backoff
        self.maximumRetryAfter = maximumRetryAfter
        self.retryableStatusCodes = retryableStatusCodes
        self.retryableErrorCodes = retryableErrorCodes
        self.idempotentMethods = idempotentMethods
        self.unit = unit
    }

    /// Decides with no time spent so far.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int) async -> RetryDecision {
        decision(for: request, after: failure, attempt: attempt, elapsed: .zero, now: Date())
    }

    /// Retries when the request may be repeated, the failure is worth it, and the wait fits the limits.
    public func retry(_ request: HTTPRequest, after failure: NetworkError, attempt: Int, elapsed: Duration) async -> RetryDecision {
        decision(for: request, after: failure, attempt: attempt, elapsed: elapsed, now: Date())
    }

    /// The decision, as a pure function of its inputs (and of ``unit`` for the jitter).
    func decision(for request: HTTPRequest, after failure: NetworkError, attempt: Int, elapsed: Duration, now: Date) -> RetryDecision {
        guard attempt < maximumAttempts, isRepeatable(request), isWorthRetrying(failure) else { return .doNotRetry }
        let delay: Duration
        if let response = failure.response, let asked = RetryAfter.delay(response.headers[.retryAfter], now: now) {
            guard asked <= maximumRetryAfter else { return .doNotRetry }
            delay = asked
        } else {
            delay = backoff.delay(forRetry: attempt, unit: unit())
        }
        guard elapsed + delay < maximumTotalTime else { return .doNotRetry }
        return .retry(after: delay)
    }

    /// Whether sending the request twice is harmless.
    func isRepeatable(_ request: HTTPRequest) -> Bool {
        idempotentMethods.contains(request.method) || request.headerFields[Self.idempotencyKey] != nil
    }

    /// Whether another attempt could end otherwise.
    func isWorthRetrying(_ failure: NetworkError) -> Bool {
        if let status = failure.response?.statusCode, failure.code == .unacceptableStatus {
            return retryableStatusCodes.contains(status)
        }
        return retryableErrorCodes.contains(failure.code)
    }
}
