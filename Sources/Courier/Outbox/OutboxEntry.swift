public import Foundation
public import HTTPTypes

/// A frozen request in an outbox: what was asked, and how its delivery stands.
public struct OutboxEntry: Sendable, Hashable, Identifiable {
    /// Why a frozen request was given up.
    public enum DeadLetterReason: String, Sendable, Hashable {
        /// Its time to live ran out.
        case expired
        /// It used up its attempts.
        case tooManyAttempts
    }

    /// Where a frozen request stands.
    public enum State: Sendable, Hashable {
        /// Waiting to be sent (or being sent).
        case pending
        /// Given up; kept until dropped, so the app can see it.
        case deadLettered(DeadLetterReason)
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
    /// Attempts made so far.
    public let attempts: Int
    /// When it may be tried next.
    public let nextAttemptAt: Date
    /// Where it stands.
    public let state: State
    /// The last status the server answered, if any.
    public let lastStatus: Int?
    /// Why the last attempt failed, if it did.
    public let lastError: String?
}

/// What happened to a frozen request.
public enum OutboxEvent: Sendable {
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
}
