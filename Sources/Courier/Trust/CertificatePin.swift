public import Foundation

/// Public-key pins for the hosts that match a pattern, in the format of HPKP and OkHttp's
/// `CertificatePinner`: `sha256/` and the Base64 SHA-256 of the certificate's SubjectPublicKeyInfo.
///
/// A host that matches the pattern must present a certificate whose public key is one of the pins
/// (list a backup key, so that a new certificate does not lock your app out). The key checked is the
/// server's own (the leaf certificate's): to pin a CA instead, trust only that CA with
/// ``TrustPolicy/Roots/only(_:)``.
///
/// Patterns, as OkHttp reads them: `api.example.com` matches that host only; `*.example.com` matches
/// exactly one more label (`www.example.com`, not `example.com` nor `a.b.example.com`);
/// `**.example.com` matches `example.com` and any name under it. Names are compared without case.
///
/// To compute a pin from a certificate:
/// `openssl x509 -in cert.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`.
public struct CertificatePin: Sendable, Hashable {
    /// The host pattern, lowercased.
    public let hostPattern: String
    /// The pinned SHA-256 digests of SubjectPublicKeyInfo, 32 bytes each.
    public let hashes: Set<Data>

    /// Creates pins for the hosts matching `host`.
    /// - Parameters:
    ///   - host: A host name, `*.` or `**.` followed by a domain.
    ///   - pins: One or more `sha256/BASE64` strings.
    /// - Throws: ``NetworkError`` with code ``NetworkError/Code/invalidConfiguration`` for an empty or
    ///   malformed pattern, no pins, or a pin that is not `sha256/` and the Base64 of 32 bytes.
    public init(host: String, _ pins: [String]) throws(NetworkError) {
        let pattern = TrustPolicy.canonicalHost(host)
        guard Self.isValidPattern(pattern) else {
            throw NetworkError(.invalidConfiguration, "\"\(host)\" is not a host pattern (a host name, or *. or **. and a domain)")
        }
        guard !pins.isEmpty else { throw NetworkError(.invalidConfiguration, "no pins given for \(pattern)") }
        var hashes = Set<Data>()
        for pin in pins {
            guard pin.hasPrefix("sha256/"), let digest = Data(base64Encoded: String(pin.dropFirst("sha256/".count))), digest.count == 32
            else {
                throw NetworkError(.invalidConfiguration, "\"\(pin)\" is not a pin: expected sha256/ and the Base64 of a SHA-256 digest")
            }
            hashes.insert(digest)
        }
        self.hostPattern = pattern
        self.hashes = hashes
    }

    /// Whether the pattern applies to `host` (lowercased, without brackets or a trailing dot).
    func matches(host: String) -> Bool {
        if hostPattern.hasPrefix("**.") {
            let domain = hostPattern.dropFirst(3)
            return host == domain || host.hasSuffix("." + domain)
        }
        if hostPattern.hasPrefix("*.") {
            let domain = hostPattern.dropFirst(2)
            guard host.hasSuffix("." + domain) else { return false }
            let label = host.dropLast(domain.count + 1)
            return !label.isEmpty && !label.contains(".")
        }
        return host == hostPattern
    }

    /// `sha256/BASE64` for a digest (how pins and the keys a server showed are written in messages).
    static func text(of digest: Data) -> String { "sha256/" + digest.base64EncodedString() }

    private static func isValidPattern(_ pattern: String) -> Bool {
        var name = Substring(pattern)
        if name.hasPrefix("**.") { name = name.dropFirst(3) } else if name.hasPrefix("*.") { name = name.dropFirst(2) }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        return !name.isEmpty && labels.allSatisfy { label in
            !label.isEmpty && label.utf8.allSatisfy { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0)
                || (0x61...0x7A).contains($0) || $0 == UInt8(ascii: ":") }
        }
    }
}
