import Foundation

/// The Public Suffix List's algorithm (https://publicsuffix.org/list/, "Formal algorithm") over
/// Courier's copy of the list (both its ICANN and PRIVATE sections, as browsers use for cookies):
/// which trailing labels of a host name are a public suffix (`co.uk`, `github.io`), and so which
/// registrable domain (eTLD+1: `example.co.uk`) it belongs to.
///
/// Rules: the longest matching rule wins, an exception rule (`!www.ck`) over any other; a wildcard
/// (`*.ck`) matches exactly one label; with no match the default rule `*` makes the last label the
/// public suffix. Names are compared case-insensitively, in ASCII: hosts arrive in punycode and the
/// list's Unicode rules were converted to punycode by `scripts/make-public-suffix-list`, which
/// generates `PublicSuffixList+Rules.swift`. A name with one trailing dot (`a.co.uk.`) is looked up
/// without it and keeps it in the answer (as Chromium does); a name with an empty label (`a..uk`,
/// `.uk`, ``) is treated as a public suffix, so nothing can be scoped to it.
///
/// ``shared`` reads the rules once, lazily (the first cookie that needs it), in a few milliseconds;
/// a lookup then costs a few hash lookups per label.
struct PublicSuffixList: Sendable {
    /// The list Courier ships, read on first use.
    static let shared = PublicSuffixList(rules: rulesText)

    /// Plain rules (`co.uk`).
    private let rules: Set<Substring>
    /// Wildcard rules without their `*.` (`ck` for `*.ck`).
    private let wildcards: Set<Substring>
    /// Exception rules without their `!` (`www.ck` for `!www.ck`).
    private let exceptions: Set<Substring>

    /// Reads rules separated by whitespace, in the list's syntax (`co.uk`, `*.ck`, `!www.ck`), ASCII
    /// and lowercase.
    init(rules text: String) {
        var rules = Set<Substring>(), wildcards = Set<Substring>(), exceptions = Set<Substring>()
        for rule in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            if rule.hasPrefix("!") {
                exceptions.insert(rule.dropFirst())
            } else if rule.hasPrefix("*.") {
                wildcards.insert(rule.dropFirst(2))
            } else {
                rules.insert(rule)
            }
        }
        (self.rules, self.wildcards, self.exceptions) = (rules, wildcards, exceptions)
    }

    /// Whether a name is a public suffix (or has an empty label): `co.uk`, `github.io`, `com`,
    /// `anything.ck`, but not `www.ck` nor `example.com`.
    /// - Parameter name: A host or domain name, in ASCII.
    func isPublicSuffix(_ name: String) -> Bool {
        guard let found = lookup(name) else { return true }
        return found.suffixCount == found.labels.count
    }

    /// The registrable domain (eTLD+1) of a name: the public suffix and one more label, lowercase
    /// (`example.co.uk` for `www.example.co.uk`; a trailing dot is kept); `nil` when the name is a
    /// public suffix itself or has an empty label.
    /// - Parameter name: A host or domain name, in ASCII.
    func registrableDomain(of name: String) -> String? {
        guard let found = lookup(name), found.suffixCount < found.labels.count else { return nil }
        return String(found.name[found.labels[found.labels.count - found.suffixCount - 1].startIndex...])
    }

    /// The lowercased name, its labels (a trailing dot left out) and how many of the last ones are the
    /// public suffix; `nil` for a name with an empty label.
    private func lookup(_ name: String) -> (name: String, labels: [Substring], suffixCount: Int)? {
        let full = name.lowercased()
        var lowercased = Substring(full)
        if lowercased.hasSuffix(".") { lowercased = lowercased.dropLast() }
        let labels = lowercased.split(separator: ".", omittingEmptySubsequences: false)
        guard !labels.contains(where: \.isEmpty) else { return nil }
        let count = labels.count
        // The candidate made of the labels from `index` on.
        func suffix(from index: Int) -> Substring { lowercased[labels[index].startIndex...] }
        // An exception rule prevails over every other rule; its suffix is the rule minus its first label.
        for index in 0..<count where exceptions.contains(suffix(from: index)) {
            return (full, labels, count - index - 1)
        }
        // Otherwise the longest match: a plain rule, or a wildcard whose `*` is this candidate's first label.
        for index in 0..<count {
            if rules.contains(suffix(from: index)) || (index + 1 < count && wildcards.contains(suffix(from: index + 1))) {
                return (full, labels, count - index)
            }
        }
        return (full, labels, 1)
    }
}
