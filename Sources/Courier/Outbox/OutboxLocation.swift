public import Foundation
package import Logging
import NIOConcurrencyHelpers

/// Where an engine keeps the requests it freezes (``NetworkEngine/Configuration/outbox``).
///
/// - ``sqlite(directory:)``, the default (in ``Outbox/defaultDirectory``): an SQLite database in a data
///   directory, for an app or one server. Every engine and process using the directory shares it.
/// - A server that many instances of a service share, so that what one instance froze is delivered by
///   whichever is alive: `CourierPostgres` adds `.postgres(client:name:)`.
///
/// ```swift
/// let engine = NetworkEngine(host: "api.example.com", configuration: .init {
///     $0.outbox = .sqlite(directory: URL(fileURLWithPath: "/var/lib/orders"))
/// })
/// ```
public struct OutboxLocation: Sendable, CustomStringConvertible {
    /// The data directory of an SQLite outbox; `nil` for an outbox on a server.
    public let directory: URL?
    /// Where the outbox is, for messages: a path, or a server's address and the outbox's name (never a
    /// credential).
    public let description: String
    /// Where it is, as ``Outbox/directory`` says: the data directory, or a URL naming the server's outbox.
    let url: URL
    /// Which ``OutboxListeners`` its store has (subscribing to events needs no open store).
    let listenersKey: String
    let exists: @Sendable () -> Bool
    let open: @Sendable (Logger?) throws(NetworkError) -> any OutboxStore

    /// An SQLite outbox in a data directory (created, with owner-only permissions, when a request is first
    /// frozen), shared by every engine and process that uses the directory.
    /// - Parameter directory: The data directory.
    /// - Returns: The location.
    public static func sqlite(directory: URL) -> OutboxLocation {
        OutboxLocation(
            directory: directory, description: directory.path, url: directory, listenersKey: sqliteListenersKey(directory), exists: { OutboxDatabase.exists(at: directory) },
            open: { logger throws(NetworkError) in try OutboxDatabase.open(at: directory, logger: logger) })
    }

    /// A location whose store another module of this package provides.
    /// - Parameters:
    ///   - description: Where it is, for messages (no credential).
    ///   - exists: Whether it may hold rows already (an engine starts replaying at once when it does).
    ///   - open: Opens the store (once per process and location is the store's business).
    ///   - url: What ``Outbox/directory`` says for it.
    ///   - listenersKey: The key of its store's ``OutboxListeners/shared(_:)``.
    package init(
        description: String, url: URL, listenersKey: String, exists: @escaping @Sendable () -> Bool,
        open: @escaping @Sendable (Logger?) throws(NetworkError) -> any OutboxStore
    ) {
        self.init(directory: nil, description: description, url: url, listenersKey: listenersKey, exists: exists, open: open)
    }

    private init(
        directory: URL?, description: String, url: URL, listenersKey: String, exists: @escaping @Sendable () -> Bool,
        open: @escaping @Sendable (Logger?) throws(NetworkError) -> any OutboxStore
    ) {
        self.directory = directory
        self.description = description
        self.url = url
        self.listenersKey = listenersKey
        self.exists = exists
        self.open = open
    }
}

extension OutboxLocation {
    /// The listeners key of the SQLite outbox in a directory.
    static func sqliteListenersKey(_ directory: URL) -> String { "sqlite:" + directory.standardizedFileURL.path }
}

extension OutboxLocation {
    private static let ioQueues = NIOLockedValueBox<[String: DispatchQueue]>([:])

    /// The serial queue this outbox's freezes, drops and openings run on: one per outbox, so that requests
    /// are committed in the order they were frozen, and an outbox that waits (a server that is down, a
    /// database busy) never holds up another's.
    var io: DispatchQueue {
        Self.ioQueues.withLockedValue { queues in
            if let queue = queues[listenersKey] { return queue }
            let queue = DispatchQueue(label: "courier.outbox.io")
            queues[listenersKey] = queue
            return queue
        }
    }
}
