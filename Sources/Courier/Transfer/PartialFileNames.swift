package import Foundation

/// The names of the files a download keeps beside its destination, derived in this one place: the
/// partial file (`.<name>.courier-partial`), its resume record (`.<name>.courier-partial.json`), the
/// record's temporary (`..<name>.courier-partial.json.tmp-<12>`) and a shared download's copy
/// (`.<name>.courier-copy-<12>`). The writer, the record store and the command line's progress bar all
/// call it, so they can never disagree about where a partial file is.
///
/// A file system takes names of at most 255 bytes (`NAME_MAX`); the longest of these adds 40 bytes to
/// the destination's name. A destination whose name is longer than ``maximumStemLength`` bytes keeps a
/// shortened stem instead: its first bytes (whole characters), `~`, and 16 hexadecimal digits of the
/// SHA-256 of the whole name, so two long names that share a beginning still have partials of their own.
package enum PartialFileNames {
    /// The most bytes a name may have on the file systems Courier writes to.
    static let nameMax = 255
    /// The most bytes added around the stem: the record's temporary, `..<stem>.courier-partial.json.tmp-` + 12.
    static let longestAddition = 2 + ".courier-partial.json".utf8.count + ".tmp-".utf8.count + 12
    /// The longest stem kept whole.
    static let maximumStemLength = nameMax - longestAddition

    /// The name the sidecars are derived from: `name` itself when short enough, else a shortened form.
    static func stem(of name: String) -> String {
        guard name.utf8.count > maximumStemLength else { return name }
        let digest = String(Digests.sha256Hex(of: name).prefix(16))
        let budget = maximumStemLength - 1 - digest.utf8.count
        var prefix = ""
        var used = 0
        for character in name {
            let size = character.utf8.count
            guard used + size <= budget else { break }
            prefix.append(character)
            used += size
        }
        return "\(prefix)~\(digest)"
    }

    /// The partial file beside `destination`: the bytes received so far.
    package static func partialURL(for destination: URL) -> URL {
        sibling(of: destination, named: ".\(stem(of: destination.lastPathComponent)).courier-partial")
    }

    /// The resume record beside `destination` (see ``ResumeRecordStore``).
    static func recordURL(for destination: URL) -> URL {
        sibling(of: destination, named: ".\(stem(of: destination.lastPathComponent)).courier-partial.json")
    }

    /// The prefix of the record's temporaries (a random suffix of 12 characters follows).
    static func recordTemporaryPrefix(for destination: URL) -> String {
        ".\(recordURL(for: destination).lastPathComponent).tmp-"
    }

    /// A temporary record beside `destination`, named with `random` (12 characters).
    static func recordTemporaryURL(for destination: URL, random: some StringProtocol) -> URL {
        sibling(of: destination, named: recordTemporaryPrefix(for: destination) + random.suffix(12))
    }

    /// A temporary copy beside `destination` (a shared download's file for another operation).
    static func copyURL(for destination: URL, random: some StringProtocol) -> URL {
        sibling(of: destination, named: ".\(stem(of: destination.lastPathComponent)).courier-copy-\(random.suffix(12))")
    }

    private static func sibling(of destination: URL, named name: String) -> URL {
        destination.deletingLastPathComponent().appendingPathComponent(name)
    }
}
