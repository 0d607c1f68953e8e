import Foundation
import Testing
@testable import Courier

/// Where the cache and the outbox live by default.
@Suite("Platform directories")
struct PlatformDirectoryTests {
    #if !canImport(Darwin)
    @Test func xdgVariablesWinWhenAbsoluteElseTheHomeFallback() {
        let data = { (environment: [String: String]) in
            PlatformDirectory.courier(xdgVariable: "XDG_DATA_HOME", fallback: ".local/share", apple: .applicationSupportDirectory, environment: environment).path
        }
        #expect(data(["XDG_DATA_HOME": "/srv/data", "HOME": "/home/ada"]) == "/srv/data/courier")
        #expect(data(["XDG_DATA_HOME": "relative/data", "HOME": "/home/ada"]) == "/home/ada/.local/share/courier", "a relative XDG path is ignored, as the spec says")
        #expect(data(["HOME": "/home/ada"]) == "/home/ada/.local/share/courier")
        let cache = PlatformDirectory.courier(xdgVariable: "XDG_CACHE_HOME", fallback: ".cache", apple: .cachesDirectory, environment: ["HOME": "/home/ada"])
        #expect(cache.path == "/home/ada/.cache/courier")
        #expect(Outbox.defaultDirectory.lastPathComponent == "courier")
        #expect(ResponseCache.defaultDirectory != Outbox.defaultDirectory, "cache and data never share a directory")
    }
    #endif
}
