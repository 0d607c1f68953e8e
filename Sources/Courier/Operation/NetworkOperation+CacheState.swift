import Foundation
import HTTPTypes

extension NetworkOperation {
    /// An operation's cache settings and what its lookup found, kept for the answer
    /// (see NetworkOperation+Cache).
    struct CacheState {
        /// The operation's own cache policy, if it overrides its engine's.
        var policy: CachePolicy?
        /// The operation's own choice about stale answers while disconnected, if it overrides its engine's.
        var servesStaleWhenDisconnected: Bool?
        /// The stored response being revalidated, delivered first (cached-then-fresh), or kept for a
        /// fallback after a failure.
        var entry: CachedResponseEntry?
        /// Every stored response that matches the request: those a 304 may update (RFC 9111 §4.3.4).
        var matching: [CachedResponseEntry] = []
        /// Whether the cache added its own validators to the request (then a 304 is the cache's, not
        /// the application's).
        var addedValidators = false
        /// A stored partial response (RFC 9111 §3.4) whose missing bytes the request asks for with the
        /// `Range` and `If-Range` the cache added; the answer combines them into the complete response.
        var partial: CachedResponseEntry?
        /// Whether a stored response was already delivered ahead of the network (cached-then-fresh):
        /// a disconnection then reports the failure instead of delivering it again.
        var deliveredCached = false
        /// When the request was made, by the cache's clock.
        var requestTime: Date?
        /// Whether the request went out with credentials no interceptor declared: its response is not
        /// stored (it could not be kept apart from another user's).
        var credentialsUndeclared = false
    }
}
