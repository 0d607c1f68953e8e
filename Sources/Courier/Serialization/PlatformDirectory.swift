import Foundation

/// Courier's per-user directories: XDG on Linux, the user domain's directories on Apple platforms.
enum PlatformDirectory {
    /// `$VARIABLE/courier` when the variable holds an absolute path, else `~/FALLBACK/courier` on Linux;
    /// `APPLE/courier` in the user domain on Apple platforms.
    static func courier(
        xdgVariable: String, fallback: String, apple: FileManager.SearchPathDirectory,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> URL {
        #if canImport(Darwin)
        let base = FileManager.default.urls(for: apple, in: .userDomainMask).first ?? FileManager.default.temporaryDirectory
        return base.appendingPathComponent("courier", isDirectory: true)
        #else
        if let xdg = environment[xdgVariable], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("courier", isDirectory: true)
        }
        let home = environment["HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(fallback, isDirectory: true).appendingPathComponent("courier", isDirectory: true)
        #endif
    }
}
