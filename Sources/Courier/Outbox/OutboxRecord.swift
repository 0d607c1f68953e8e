package import Foundation
import GRDB
package import HTTPTypes

/// A row of the outbox: everything needed to send a frozen request again, minus its secrets.
package struct OutboxRecord: Sendable {
    package var id: String
    package var origin: String
    package var method: HTTPRequest.Method
    package var url: URL
    /// The headers as frozen: credentials (``CredentialFields``) are never here.
    package var headers: HTTPFields
    /// The body in memory; for a frozen file or form, the bytes its ``frozenBody`` names.
    package var body: Data?
    /// How a file or multipart body is rebuilt from the outbox's copies; `nil` for a body in memory.
    package var frozenBody: FrozenBody?
    /// The length of a body its store keeps in chunks of its own (a PostgreSQL outbox's frozen file or
    /// form); `nil` for a body in ``body`` or rebuilt from ``frozenBody``.
    package var chunkedBodyLength: Int64?
    package var idempotencyKey: String
    package var createdAt: Double
    package var expiresAt: Double?
    package var maximumAttempts: Int?
    package var attempts = 0
    package var nextAttemptAt: Double
    package var deadReason: OutboxEntry.DeadLetterReason?
    package var lastStatus: Int?
    package var lastError: String?
    /// The row's ordering key (``NetworkOperation/orderingKey``); `nil` for the host's lane.
    package var orderingKey: String?
    /// The pipeline that froze the row and alone may replay it (``OutboxPipeline``); `nil` for a row
    /// written by a version before pipelines, which any engine of its origin replays.
    package var pipeline: String?

    /// The row's lane in ``ReplayStateMachine``: its ordering key, `""` for the host's.
    package var lane: String { orderingKey ?? "" }

    /// The origin an engine replays: `scheme://host:port`, lowercased.
    package static func origin(of url: URL) -> String {
        Origin(url)?.description ?? "http://:80"
    }

    package var entry: OutboxEntry {
        OutboxEntry(
            id: id, method: method, url: url, idempotencyKey: idempotencyKey,
            createdAt: Date(timeIntervalSince1970: createdAt), attempts: attempts,
            nextAttemptAt: Date(timeIntervalSince1970: nextAttemptAt),
            state: deadReason.map { .deadLettered($0) } ?? .pending, lastStatus: lastStatus, lastError: lastError,
            orderingKey: orderingKey)
    }

    /// Decodes a row; `nil` for anything damaged (GRDB's subscript would trap on a wrong type).
    init?(row: Row) {
        func column<Value: DatabaseValueConvertible>(_ name: String, as type: Value.Type = Value.self) -> Value? {
            try? row.decode(Value.self, forColumn: name)
        }
        guard let id = column("id", as: String.self), let origin = column("origin", as: String.self),
            let methodName = column("method", as: String.self), let method = HTTPRequest.Method(methodName),
            let urlString = column("url", as: String.self), let url = URL(string: urlString),
            let headerText = column("headers", as: String.self), let stored = Self.headers(fromColumn: headerText),
            let key = column("idempotencyKey", as: String.self), let createdAt = column("createdAt", as: Double.self),
            let attempts = column("attempts", as: Int.self), let nextAttemptAt = column("nextAttemptAt", as: Double.self)
        else { return nil }
        let (headers, requirements) = stored
        let body = column("body", as: Data.self)
        var frozenBody: FrozenBody?
        if let layout = column("bodyLayout", as: String.self) {
            // A layout that cannot be read (or does not fit the row's bytes) makes the row damaged: never
            // sent with a body other than the one frozen.
            guard let parsed = FrozenBody(text: layout, bytes: body) else { return nil }
            frozenBody = parsed
        } else if requirements.contains(Self.bodyLayoutRequirement), column("outcome", as: String.self) == nil {
            // A pending row that says its body is in copies, without the layout to rebuild it: damaged.
            return nil
        }
        // Chunks are a server store's (PostgreSQL): a file row naming them has no body to send.
        if requirements.contains(Self.bodyChunksRequirement) { return nil }
        self.init(
            id: id, origin: origin, method: method, url: url, headers: CredentialFields.removed(from: headers),
            body: body, frozenBody: frozenBody, idempotencyKey: key, createdAt: createdAt,
            expiresAt: column("expiresAt", as: Double.self), maximumAttempts: column("maximumAttempts", as: Int.self),
            attempts: attempts, nextAttemptAt: nextAttemptAt,
            deadReason: column("deadReason", as: String.self).flatMap(OutboxEntry.DeadLetterReason.init(rawValue:)),
            lastStatus: column("lastStatus", as: Int.self), lastError: column("lastError", as: String.self),
            orderingKey: column("orderingKey", as: String.self), pipeline: column("pipeline", as: String.self))
    }

    // MARK: The headers column, and what older versions must not read

    /// The requirement a row whose body is rebuilt from copies (``frozenBody``) carries.
    static let bodyLayoutRequirement = "bodyLayout"
    /// The requirement a row whose body its store keeps in chunks (``chunkedBodyLength``) carries.
    package static let bodyChunksRequirement = "bodyChunks"
    /// The requirements this version can meet; a row naming another is damaged here (a later version's).
    static let knownRequirements: Set<String> = [bodyLayoutRequirement, bodyChunksRequirement]

    /// The `headers` column of a row. A row whose body is rebuilt from copies cannot be replayed by a
    /// version that does not know ``frozenBody`` (every version before frozen uploads would send its
    /// `body` column, the fields of a form or nothing at all, in place of the body): its fields are
    /// wrapped in an object naming what a reader must understand,
    /// `{"fields":[["Content-Type","…"],…],"requires":["bodyLayout"]}`. Every earlier version reads this
    /// column as a list of name/value pairs, so it cannot read such a row and sets it aside as damaged
    /// (kept, never sent). Rows with a body in memory keep the plain list, readable by every version.
    /// - Parameters:
    ///   - headers: The fields to store.
    ///   - requirements: What a reader must understand to replay the row; none for a plain row.
    /// - Returns: The column's text.
    package static func headersColumn(_ headers: HTTPFields, requirements: [String]) -> String {
        guard !requirements.isEmpty else { return DiskCacheCoding.text(of: headers) }
        let object: [String: Any] = ["requires": requirements, "fields": headers.map { [$0.name.rawName, $0.value] }]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return "[]" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads the `headers` column: a plain list of pairs, or an object with its requirements (see
    /// ``headersColumn(_:requirements:)``). `nil` when it cannot be read, or names a requirement this
    /// version does not know (written by a later version: never replayed as something else).
    package static func headers(fromColumn text: String) -> (HTTPFields, requirements: Set<String>)? {
        if let fields = DiskCacheCoding.headers(from: text) { return (fields, []) }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
            let requirements = object["requires"] as? [String], let pairs = object["fields"] as? [[String]],
            Set(requirements).isSubset(of: knownRequirements)
        else { return nil }
        var fields = HTTPFields()
        for pair in pairs {
            guard pair.count == 2, let name = HTTPField.Name(pair[0]) else { return nil }
            fields.append(HTTPField(name: name, value: pair[1]))
        }
        return (fields, Set(requirements))
    }

    package init(
        id: String, origin: String, method: HTTPRequest.Method, url: URL, headers: HTTPFields, body: Data?,
        frozenBody: FrozenBody? = nil, idempotencyKey: String, createdAt: Double, expiresAt: Double?, maximumAttempts: Int?, attempts: Int = 0,
        nextAttemptAt: Double, deadReason: OutboxEntry.DeadLetterReason? = nil, lastStatus: Int? = nil, lastError: String? = nil,
        orderingKey: String? = nil, pipeline: String? = nil
    ) {
        self.id = id
        self.origin = origin
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.frozenBody = frozenBody
        self.idempotencyKey = idempotencyKey
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.maximumAttempts = maximumAttempts
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.deadReason = deadReason
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.orderingKey = orderingKey
        self.pipeline = pipeline
    }
}
