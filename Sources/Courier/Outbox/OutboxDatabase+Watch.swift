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

    /// Starts the watch (an operation waits, and it was not running).
    func startWatching() {
        scheduleWatch()
    }

    private func scheduleWatch() {
        work.asyncAfter(deadline: .now() + Self.watchInterval) { [weak self] in self?.watchOnce() }
    }

    private func watchOnce() {
        guard let ids = listeners.watchedRows() else { return }
        let stamp = filesStamp()
        let changed = listeners.state.withLockedValue { state in
            defer { state.watchedStamp = stamp }
            return state.watchedStamp != stamp || stamp.isEmpty
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
        listeners.settle(ids, found: found)
    }
}
