import Foundation

/// A small tmpfs mounted on a fresh temporary folder, for tests of a full disk or a read-only folder.
/// Needs the right to mount (root, or CAP_SYS_ADMIN): ``isPermitted`` says whether this machine gives it.
struct TemporaryMount {
    let folder: URL

    /// Whether `mount -t tmpfs` works here (tried once, on a probe folder that is unmounted at once).
    static let isPermitted: Bool = {
        guard let probe = try? TemporaryMount(size: "64k", readOnly: false) else { return false }
        probe.unmount()
        return true
    }()

    /// Mounts a tmpfs of `size` (`mount` syntax: `1m`, `64k`) on a new temporary folder.
    init(size: String, readOnly: Bool) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-mount-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let options = (readOnly ? "ro," : "") + "size=\(size),mode=0777"
        let status = Self.run("/bin/mount", "-t", "tmpfs", "-o", options, "tmpfs", folder.path)
        guard status == 0 else {
            try? FileManager.default.removeItem(at: folder)
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSLocalizedDescriptionKey: "mount -t tmpfs exited with \(status)"])
        }
    }

    /// Unmounts (lazily if busy) and removes the folder.
    func unmount() {
        if Self.run("/bin/umount", folder.path) != 0 { _ = Self.run("/bin/umount", "-l", folder.path) }
        try? FileManager.default.removeItem(at: folder)
    }

    /// Names in the mounted folder, hidden ones (partial files, records) included.
    var names: Set<String> { Set((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []) }

    @discardableResult
    private static func run(_ tool: String, _ arguments: String...) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
