import Foundation

/// Tells the kind of a Linux network interface from sysfs (`/sys/class/net/NAME`).
///
/// - `wireless` or `phy80211` in the interface's directory, or `DEVTYPE=wlan` in its `uevent`: Wi-Fi;
/// - `DEVTYPE=wwan` in its `uevent`: cellular;
/// - the loopback interface: other;
/// - anything else (Ethernet, veth, bridges, tunnels): wired.
///
/// The root is injectable so tests can build a fake tree. Reads only; a missing or unreadable entry
/// counts as absent.
struct InterfaceClassifier: Sendable {
    /// The directory that holds one entry per interface.
    var root: String

    /// - Parameter root: The sysfs directory of network interfaces; `/sys/class/net` by default.
    init(root: String = "/sys/class/net") {
        self.root = root
    }

    /// The kind of the interface `name`.
    /// - Parameters:
    ///   - name: The interface name, as `getifaddrs` gives it.
    ///   - isLoopback: Whether the interface has `IFF_LOOPBACK`.
    func kind(of name: String, isLoopback: Bool) -> ReachabilityStatus.Interface {
        if isLoopback { return .other }
        // A name with a slash (or "." / "..") cannot be an interface; don't let it walk the tree.
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else { return .wired }
        let directory = root + "/" + name
        if exists(directory + "/wireless") || exists(directory + "/phy80211") { return .wifi }
        switch deviceType(in: directory) {
        case "wlan": return .wifi
        case "wwan": return .cellular
        default: return .wired
        }
    }

    /// `DEVTYPE` from the interface's `uevent`, if any.
    private func deviceType(in directory: String) -> String? {
        guard let data = FileManager.default.contents(atPath: directory + "/uevent") else { return nil }
        for line in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == "DEVTYPE" {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// Whether `path` exists, without following a final symbolic link (`phy80211` is a link).
    private func exists(_ path: String) -> Bool {
        (try? FileManager.default.attributesOfItem(atPath: path)) != nil
    }
}
