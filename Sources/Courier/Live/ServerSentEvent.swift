public import Foundation

/// One server-sent event, as the WHATWG HTML standard's event stream format defines it
/// (`text/event-stream`): what ``NetworkEngine/events(path:params:options:configure:)`` yields.
///
/// ```swift
/// for try await event in engine.events(path: "/notifications") {
///     if event.event == "order" { let order = try event.decode(Order.self) }
/// }
/// ```
public struct ServerSentEvent: Sendable, Hashable {
    /// The stream's last event ID when this event was dispatched: the last `id:` field the server sent,
    /// in this event or before it (`nil` while none was sent, or after an empty `id:` reset it). It is
    /// what the next connection sends as `Last-Event-ID`.
    public var id: String?
    /// The event's type: its `event:` field, `"message"` when it had none.
    public var event: String
    /// The event's `data:` lines, joined with line feeds.
    public var data: String
    /// The reconnection time a `retry:` field in this event's block set, if one did.
    public var retry: Duration?

    /// Creates an event (for tests and stubs).
    /// - Parameters:
    ///   - id: The last event ID.
    ///   - event: The type; `"message"` by default.
    ///   - data: The data.
    ///   - retry: The reconnection time the event set, if any.
    public init(id: String? = nil, event: String = "message", data: String, retry: Duration? = nil) {
        self.id = id
        self.event = event
        self.data = data
        self.retry = retry
    }

    /// Decodes the event's data as JSON (an LLM's token, a notification's payload).
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder; a default `JSONDecoder` when omitted.
    /// - Returns: The decoded value.
    /// - Throws: ``NetworkError`` with ``NetworkError/Code/decodingFailed``.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws(NetworkError) -> T {
        do {
            return try decoder.decode(type, from: Data(data.utf8))
        } catch {
            throw NetworkError(.decodingFailed, "the \(event) event's data is not a \(T.self): \(error)", underlying: error)
        }
    }
}
