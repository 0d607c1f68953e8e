import Foundation
import Testing
@testable import Courier

/// Tier 1: the kind of an interface from a fake sysfs tree.
@Suite("InterfaceClassifier")
struct InterfaceClassifierTests {
    /// A temporary `/sys/class/net` with one entry per kind.
    final class FakeSysfs {
        let root: URL

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("courier-sysfs-\(UUID().uuidString)")
            let files = FileManager.default
            func directory(_ path: String) throws {
                try files.createDirectory(at: root.appendingPathComponent(path), withIntermediateDirectories: true)
            }
            func write(_ path: String, _ text: String) throws {
                try Data(text.utf8).write(to: root.appendingPathComponent(path))
            }
            // Wi-Fi with a `wireless` directory (the wireless extensions).
            try directory("wlan0/wireless")
            try write("wlan0/uevent", "DEVTYPE=wlan\nINTERFACE=wlan0\nIFINDEX=3\n")
            // Wi-Fi with only a `phy80211` link (cfg80211 drivers without wireless extensions).
            try directory("ieee80211/phy0")
            try directory("wlp2s0")
            try files.createSymbolicLink(atPath: root.appendingPathComponent("wlp2s0/phy80211").path, withDestinationPath: "../ieee80211/phy0")
            try write("wlp2s0/uevent", "INTERFACE=wlp2s0\nIFINDEX=4\n")
            // A dangling phy80211 link still says Wi-Fi.
            try directory("wlx1")
            try files.createSymbolicLink(atPath: root.appendingPathComponent("wlx1/phy80211").path, withDestinationPath: "../nowhere")
            // Wi-Fi by uevent alone.
            try directory("wlan7")
            try write("wlan7/uevent", "INTERFACE=wlan7\nDEVTYPE=wlan\n")
            // Cellular.
            try directory("wwan0")
            try write("wwan0/uevent", "INTERFACE=wwan0\nIFINDEX=5\nDEVTYPE=wwan\n")
            // Plain Ethernet and a veth: wired.
            try directory("eth0")
            try write("eth0/uevent", "INTERFACE=eth0\nIFINDEX=2\n")
            try directory("veth9")
            try write("veth9/uevent", "DEVTYPE=veth\n")
            // A bridge with no uevent at all.
            try directory("br0")
            // Outside the tree, to check that names cannot walk out of it.
            try directory("../\(root.lastPathComponent)-outside/wireless")
        }

        deinit {
            try? FileManager.default.removeItem(at: root)
            try? FileManager.default.removeItem(at: root.deletingLastPathComponent().appendingPathComponent("\(root.lastPathComponent)-outside"))
        }

        var classifier: InterfaceClassifier { InterfaceClassifier(root: root.path) }
    }

    @Test func wifiFromTheWirelessDirectoryThePhyLinkOrTheDeviceType() throws {
        let sysfs = try FakeSysfs()
        #expect(sysfs.classifier.kind(of: "wlan0", isLoopback: false) == .wifi)
        #expect(sysfs.classifier.kind(of: "wlp2s0", isLoopback: false) == .wifi)
        #expect(sysfs.classifier.kind(of: "wlx1", isLoopback: false) == .wifi, "a link is enough, even a dangling one")
        #expect(sysfs.classifier.kind(of: "wlan7", isLoopback: false) == .wifi)
    }

    @Test func cellularFromDeviceTypeWWAN() throws {
        let sysfs = try FakeSysfs()
        #expect(sysfs.classifier.kind(of: "wwan0", isLoopback: false) == .cellular)
    }

    @Test func everythingElseIsWired() throws {
        let sysfs = try FakeSysfs()
        #expect(sysfs.classifier.kind(of: "eth0", isLoopback: false) == .wired)
        #expect(sysfs.classifier.kind(of: "veth9", isLoopback: false) == .wired)
        #expect(sysfs.classifier.kind(of: "br0", isLoopback: false) == .wired)
        #expect(sysfs.classifier.kind(of: "missing0", isLoopback: false) == .wired, "an interface sysfs does not know")
    }

    @Test func loopbackIsOtherWhateverSysfsSays() throws {
        let sysfs = try FakeSysfs()
        #expect(sysfs.classifier.kind(of: "lo", isLoopback: true) == .other)
        #expect(sysfs.classifier.kind(of: "wlan0", isLoopback: true) == .other)
    }

    @Test func namesCannotLeaveTheTree() throws {
        let sysfs = try FakeSysfs()
        let outside = "../\(sysfs.root.lastPathComponent)-outside"
        #expect(FileManager.default.fileExists(atPath: sysfs.root.path + "/" + outside + "/wireless"))
        #expect(sysfs.classifier.kind(of: outside, isLoopback: false) == .wired)
        #expect(sysfs.classifier.kind(of: "..", isLoopback: false) == .wired)
        #expect(sysfs.classifier.kind(of: "", isLoopback: false) == .wired)
    }

    #if os(Linux)
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/sys/class/net/eth0"), "needs an eth0"))
    func theRealSysfsOfThisMachine() {
        let classifier = InterfaceClassifier()
        #expect(classifier.kind(of: "lo", isLoopback: true) == .other)
        // eth0 here is a plain (virtual) Ethernet device.
        #expect(classifier.kind(of: "eth0", isLoopback: false) == .wired)
    }
    #endif
}
