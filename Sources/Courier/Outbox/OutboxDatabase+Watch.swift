import Foundation
import GRDB
import HTTPTypes
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Another process (`courier outbox flush`, an app extension, a second instance) may deliver, drop or
// dead-letter a row that an operation of this process is waiting for. SQLite tells no one, so while
// such operations exist this process checks twice a second, on the outbox's work queue, whether the
// database files changed (two `stat` calls), reads the rows of its waiting operations only when they
// did, and finishes each operation with what became of its row.
extension OutboxDatabase {
    /// How often the database files are checked while operations wait.
    static let watchInterval: DispatchTimeInterval = .milliseconds(500)

    /// Starts the watch if an operation waits and it is not running yet.
    func watchIfNeeded() {
        let start = listeners.withLockedValue { listeners -> Bool in
            guard !listeners.isWatching, !listeners.operations.isEmpty else { return false }
            listeners.isWatching = true
            return true
        }
        if start { scheduleWatch() }
    }

    private func scheduleWatch() {
        work.asyncAfter(deadline: .now() + Self.watchInterval) { [weak self] in self?.watchOnce() }
    }

    private func watchOnce() {
        let ids = listeners.withLockedValue { listeners -> [String]? in
            guard !listeners.operations.isEmpty else {
                listeners.isWatching = false
                return nil
            }
            // A row this process is replaying is settled by its replayer.
            return listeners.operations.keys.filter { listeners.replays[$0] == nil }
        }
        guard let ids else { return }
        let stamp = filesStamp()
        let changed = listeners.withLockedValue { listeners in
            defer { listeners.watchedStamp = stamp }
            return listeners.watchedStamp != stamp || stamp.isEmpty
        }
        if changed, !ids.isEmpty { settle(ids) }
        scheduleWatch()
    }

    /// Size and modification time of the database and its write-ahead log: any commit, by any process,
    /// changes one of them.
    private func filesStamp() -> [Int64] {
        ["outbox.sqlite", "outbox.sqlite-wal"].flatMap { name -> [Int64] in
            var info = stat()
            guard stat(directory.appendingPathComponent(name).path, &info) == 0 else { return [-1] }
            #if canImport(Darwin)
            let modified = info.st_mtimespec
            #else
            let modified = info.st_mtim
            #endif
            return [Int64(info.st_size), Int64(modified.tv_sec), Int64(modified.tv_nsec)]
        }
    }

    /// Finishes the waiting operations whose rows another process settled.
    func settle(_ ids: [String]) {
        guard let json = try? JSONEncoder().encode(ids),
            let rows = try? pool.read({ db in
                try Row.fetchAll(db, sql: "SELECT * FROM outbox WHERE id IN (SELECT value FROM json_each(?))",
                                 arguments: [String(decoding: json, as: UTF8.self)])
            })
        else { return }   // unreadable now: try again at the next look
        var found: [String: (record: OutboxRecord?, outcome: String?)] = [:]
        for row in rows {
            guard let id = try? row.decode(String.self, forColumn: "id") else { continue }
            found[id] = (OutboxRecord(row: row), try? row.decode(String?.self, forColumn: "outcome"))
        }
        for id in ids {
            guard let (record, outcome) = found[id] else {
                // Gone: dropped or cleared by another process.
                operationDropped(id)
                continue
            }
            guard let record else { continue }
            let response = NetworkResponse(status: HTTPResponse.Status(code: record.lastStatus ?? 200), url: record.url)
            switch outcome {
            case "delivered"?:
                guard let operation = detachOperation(for: id) else { continue }
                publish(.delivered(record.entry.with(state: .delivered), response), origin: record.origin)
                operation.finish(.success(response))
            case "failed"?:
                guard let operation = detachOperation(for: id) else { continue }
                publish(.failedPermanently(record.entry.with(state: .failedPermanently), response), origin: record.origin)
                operation.finish(.failure(NetworkError(
                    .unacceptableStatus, "the server refused the frozen request with \(response.statusCode)",
                    url: record.url.absoluteString, response: response)))
            default:
                guard let reason = record.deadReason, let operation = detachOperation(for: id) else { continue }
                publish(.deadLettered(record.entry), origin: record.origin)
                let why = reason.explanation(attempts: record.attempts, detail: record.lastError)
                operation.finish(.failure(NetworkError(.deadLettered, "the frozen request was given up: \(why)", url: record.url.absoluteString)))
            }
        }
    }
}
