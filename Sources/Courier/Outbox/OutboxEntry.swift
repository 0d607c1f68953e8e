public import Foundation
public import HTTPTypes

/// A frozen request in an outbox: what was asked, and how its delivery stands.
public struct OutboxEntry: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// Why a frozen request was given up.
    public enum DeadLetterReason: String, Sendable, Hashable {
        /// Its time to live ran out.
        case expired
        /// It used up its attempts.
        case tooManyAttempts
        /// The outbox's copy of its body (a file, or the files of a multipart form, copied when it was
        /// frozen) is missing or damaged, so the request it would send is not the one frozen.
        /// ``OutboxEntry/lastError`` says which copy and what is wrong with it.
        case bodyUnavailable
        /// A replay was answered `401 Unauthorized` or `403 Forbidden`: the credentials it went with were
        /// missing, expired or refused (the user signed out, a token the authenticator could not refresh).
        /// Kept, not dropped, so that the app can sign in again and send it once more with
        /// `Outbox.retry(_:)`, or drop it. ``OutboxEntry/lastStatus`` holds the status.
        case unauthorized
    }

    /// Where a frozen request stands.
    public enum State: Sendable, Hashable {
        /// Waiting to be sent (or being sent).
        case pending
        /// Given up; kept until dropped, so the app can see it.
        case deadLettered(DeadLetterReason)
        /// Sent, and the server answered 2xx (as reported by ``OutboxEvent/delivered(_:_:)``).
        case delivered
        /// Sent, and the server refused it for good (as reported by ``OutboxEvent/failedPermanently(_:_:)``).
        case failedPermanently
    }

    /// The entry's id (a lowercase UUID).
    public let id: String
    /// The request method.
    public let method: HTTPRequest.Method
    /// The request URL.
    public let url: URL
    /// The `Idempotency-Key` sent with every attempt, made once when the request was frozen.
    public let idempotencyKey: String
    /// When it was frozen.
    public let createdAt: Date
    /// Attempts made so far that reached the server (one that could not connect, never went out, or
    /// whose frozen body the outbox could not read back, is not counted).
    public let attempts: Int
    /// When it may be tried next.
    public let nextAttemptAt: Date
    /// Where it stands.
    public let state: State
    /// The last status the server answered, if any.
    public let lastStatus: Int?
    /// Why the last attempt failed, if it did.
    public let lastError: String?
    /// Its ordering key (``NetworkOperation/orderingKey``): `nil` when it is replayed in its host's
    /// order, with the other entries of the host that have none.
    public let orderingKey: String?
    /// When it was delivered or refused for good (see ``Outbox/outcomes``); `nil` otherwise.
    public let finishedAt: Date?

    init(
        id: String, method: HTTPRequest.Method, url: URL, idempotencyKey: String, createdAt: Date, attempts: Int,
        nextAttemptAt: Date, state: State, lastStatus: Int?, lastError: String?, orderingKey: String? = nil,
        finishedAt: Date? = nil
    ) {
        self.id = id
        self.method = method
        self.url = url
        self.idempotencyKey = idempotencyKey
        self.createdAt = createdAt
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.state = state
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.orderingKey = orderingKey
        self.finishedAt = finishedAt
    }

    /// One short line: id prefix, request (sensitive query items masked, as in
    /// ``NetworkError/description``), state, attempts, last status.
    public var description: String {
        let stateText: String = switch state {
        case .pending: "pending"
        case .deadLettered(let reason): "dead-lettered (\(reason.rawValue))"
        case .delivered: "delivered"
        case .failedPermanently: "failed permanently"
        }
        var text = "\(id.prefix(8)) \(method) \(SensitiveParameters.masked(url: url.absoluteString).prefix(80)) \(stateText), \(attempts) attempt\(attempts == 1 ? "" : "s")"
        if let lastStatus { text += ", last \(lastStatus)" }
        return text
    }

    /// The same entry in another state.
    package func with(state: State) -> OutboxEntry {
        OutboxEntry(
            id: id, method: method, url: url, idempotencyKey: idempotencyKey, createdAt: createdAt, attempts: attempts,
            nextAttemptAt: nextAttemptAt, state: state, lastStatus: lastStatus, lastError: lastError, orderingKey: orderingKey,
            finishedAt: finishedAt)
    }

    /// The same entry, finished at another time.
    package func with(finishedAt: Date?) -> OutboxEntry {
        OutboxEntry(
            id: id, method: method, url: url, idempotencyKey: idempotencyKey, createdAt: createdAt, attempts: attempts,
            nextAttemptAt: nextAttemptAt, state: state, lastStatus: lastStatus, lastError: lastError, orderingKey: orderingKey,
            finishedAt: finishedAt)
    }
}

/// What happened to a frozen request.
public enum OutboxEvent: Sendable, CustomStringConvertible {
    /// The request could not be sent and was written to the outbox (the row is committed).
    case frozen(OutboxEntry)
    /// The request was sent and the server answered 2xx; the row is gone.
    case delivered(OutboxEntry, NetworkResponse)
    /// The server refused it for good (a 4xx other than 408/429); the row is gone.
    case failedPermanently(OutboxEntry, NetworkResponse)
    /// An attempt failed (5xx, 408, 429, or no answer); it will be tried again at `nextAttemptAt`.
    case retryScheduled(OutboxEntry)
    /// It expired or ran out of attempts and is kept in the dead-letter state.
    case deadLettered(OutboxEntry)

    /// One short line: what happened, to which entry.
    public var description: String {
        switch self {
        case .frozen(let entry): "frozen \(entry)"
        case .delivered(let entry, let response): "delivered \(entry): \(response.statusCode)"
        case .failedPermanently(let entry, let response): "refused \(entry): \(response.statusCode)"
        case .retryScheduled(let entry): "retry scheduled \(entry)"
        case .deadLettered(let entry): "dead-lettered \(entry)"
        }
    }
}

extension OutboxEntry.DeadLetterReason {
    /// Why a request was given up, for its operation's ``NetworkError/Code/deadLettered`` error.
    /// - Parameters:
    ///   - attempts: The attempts it made.
    ///   - detail: The row's last error (for a body that is unavailable, what is wrong with it).
    func explanation(attempts: Int, detail: String?) -> String {
        switch self {
        case .expired: "its time to live ran out"
        case .tooManyAttempts: "it used up its \(attempts) attempts"
        case .bodyUnavailable: detail ?? "the outbox's copy of its body is missing or damaged"
        case .unauthorized: "the server refused its credentials (\(detail ?? "401 or 403")); kept until retried or dropped"
        }
    }
}
