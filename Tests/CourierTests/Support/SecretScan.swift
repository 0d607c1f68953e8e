import Foundation

/// Every byte of every file under a directory, for "no secret reaches the disk" checks.
func allBytes(under directory: URL) -> Data {
    var everything = Data()
    for case let file as URL in FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) ?? .init() {
        if let data = FileManager.default.contents(atPath: file.path) { everything.append(data) }
    }
    return everything
}

/// The secrets (plain UTF-8) found in any file under a directory.
func secretsFound(_ secrets: [String], under directory: URL) -> [String] {
    let everything = allBytes(under: directory)
    return secrets.filter { everything.range(of: Data($0.utf8)) != nil }
}
