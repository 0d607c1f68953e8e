import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Copies and damaged databases. A database set aside (OutboxDatabase+Recovery) keeps the copies of its
// rows in `outbox.sqlite.damaged-<time>-bodies/`, and the live outbox keeps the copies its rows need in
// `bodies/`; a copy the user asked to keep is never lost because a set-aside happened at the wrong moment:
// - Moving (the damaged database is renamed away, a fresh one takes its place): a row's folder goes with
//   it, **except** a copy still being made (`.partial.…` of a live process) or whose row is being committed
//   (its `.owner` names a live process): that one may be committed to the fresh database in a moment, so it
//   stays where the fresh database looks for it, and is linked into the set-aside folder as well (its row may
//   have been committed to the damaged database just before).
// - Not moving (the write-ahead log was damaged: the database is copied aside and the live one keeps what it
//   could read): every row's folder is linked into the set-aside folder, so the rows the live database lost,
//   which the copy still has, keep their copies when the live outbox sweeps the ones it has no row for.
// - After committing a frozen row, its copy is looked for where the database now holding it expects it;
//   a set-aside that took it along anyway (an older version moved every copy) is undone by linking it back.
// Links, not copies: copies are never written once made, so two names for one file cost nothing and are
// as safe; where a file system cannot link, the file is copied.
extension OutboxBodyStore {
    /// The folder of the copies kept with a set-aside database.
    /// - Parameter setAside: The set-aside database, `outbox.sqlite.damaged-<time>`.
    static func setAsideFolder(for setAside: URL) -> URL {
        setAside.deletingLastPathComponent().appendingPathComponent(setAside.lastPathComponent + "-bodies", isDirectory: true)
    }

    /// Keeps the copies of a database being set aside with it (see above). Runs under the directory's
    /// lock, like the set-aside itself.
    /// - Parameters:
    ///   - directory: The outbox's directory.
    ///   - setAside: The set-aside database's new name.
    ///   - moving: Whether the database was moved away (else copied, the live one keeping its rows).
    /// Never fails once the database has been set aside: a folder that cannot be moved, linked or copied
    /// stays in `bodies/`, where the sweep keeps it while any set-aside database exists (see
    /// ``sweep(liveRows:)``), so nothing is lost, at worst kept twice.
    static func setAside(copiesIn directory: URL, with setAside: URL, moving: Bool) {
        let bodies = directory.appendingPathComponent(folderName, isDirectory: true)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: bodies.path) else { return }
        let aside = setAsideFolder(for: setAside)
        guard mkdir(aside.path, 0o700) == 0 || errno == EEXIST else { return }
        for name in names.sorted() where isPlainName(name) {
            // A partial copy never has a row: it stays (its maker renames it, or the sweep removes it).
            let folder = bodies.appendingPathComponent(name, isDirectory: true)
            let ownerFile = folder.appendingPathComponent(ownerFileName)
            let isBeingCommitted = (try? String(contentsOf: ownerFile, encoding: .utf8)).map(OutboxDatabase.isAlive) ?? false
            let target = aside.appendingPathComponent(name, isDirectory: true)
            if moving && !isBeingCommitted, rename(folder.path, target.path) == 0 { continue }
            // Its row may be in either database (or the move failed): both keep it.
            try? link(folder, to: target)
        }
        syncFolder(aside)
        syncFolder(bodies)
    }

    /// Gives `target` (a new folder, 0700) a link to every file of `source` but its `.owner` (a copy
    /// where links are not possible).
    static func link(_ source: URL, to target: URL) throws {
        if mkdir(target.path, 0o700) != 0 && errno != EEXIST {
            throw NetworkError(.outboxUnavailable, "the folder \(target.path) could not be created: \(String(cString: strerror(errno)))")
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: source.path) where name != ownerFileName {
            let from = source.appendingPathComponent(name), to = target.appendingPathComponent(name)
            if hardLink(from.path, to.path) == 0 || errno == EEXIST { continue }
            try FileManager.default.copyItem(at: from, to: to)
        }
        syncFolder(target)
    }

    /// Syncs a folder's names, as far as possible (a set-aside is reported whatever happens).
    private static func syncFolder(_ url: URL) {
        let fd = open(url.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    /// Makes sure a committed row's copies are where the outbox looks for them. A set-aside between the
    /// copy and the commit may have taken them along (an older version moved every copy, this one leaves
    /// a copy whose row is being committed): they are linked back from the set-aside folder, which keeps
    /// its own.
    /// - Parameters:
    ///   - layout: The row's layout.
    ///   - id: The row's id.
    ///   - directory: The outbox's directory (where set-aside folders are).
    /// - Returns: `nil` when the copies are in place, else what is wrong with them.
    func restoreIfSetAside(_ layout: FrozenBody, id: String, in directory: URL) -> String? {
        guard let problem = problem(with: layout, id: id) else { return nil }
        let fileManager = FileManager.default
        guard !fileManager.fileExists(atPath: folder(for: id).path) else { return problem }
        let names = ((try? fileManager.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0.hasPrefix(OutboxDatabase.setAsidePrefix) && $0.hasSuffix("-bodies") }
            .sorted(by: >)   // the newest first
        for name in names {
            let candidate = directory.appendingPathComponent(name).appendingPathComponent(id, isDirectory: true)
            guard Self.isWhole(layout, in: candidate) else { continue }
            let partial = folder.appendingPathComponent(Self.partialPrefix + owner.replacingOccurrences(of: ":", with: ".") + "." + id)
            do {
                _ = mkdir(folder.path, 0o700)
                try Self.link(candidate, to: partial)
                guard rename(partial.path, folder(for: id).path) == 0 else { throw NetworkError(.outboxUnavailable, "rename") }
                Self.syncFolder(folder)
                return self.problem(with: layout, id: id)
            } catch {
                Self.removeTree(partial)
            }
        }
        return problem
    }

    /// Whether a folder holds every copy of a layout, each of the size copied.
    private static func isWhole(_ layout: FrozenBody, in folder: URL) -> Bool {
        problem(with: layout, in: folder) == nil
    }
}

/// `link(2)` (inside the extension, `link` names ``OutboxBodyStore/link(_:to:)``).
private func hardLink(_ from: String, _ to: String) -> Int32 { link(from, to) }
