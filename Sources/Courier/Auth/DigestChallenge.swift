import Foundation

/// A `Digest` challenge (RFC 7616 §3.3) Courier can answer, and the arithmetic of its response
/// (§3.4.1). Pure values; the state across requests is ``DigestAuthenticationStateMachine``.
struct DigestChallenge: Sendable, Hashable {
    /// The hash algorithms of RFC 7616 §3.3 that Courier supports (MD5 only for old servers).
    enum Algorithm: String, Sendable, Hashable, CaseIterable {
        case md5 = "MD5"
        case md5Session = "MD5-sess"
        case sha256 = "SHA-256"
        case sha256Session = "SHA-256-sess"

        /// The algorithm named by a challenge's `algorithm` parameter (case-insensitive); `MD5` when
        /// absent (§3.3); `nil` for one Courier does not support (SHA-512-256, unknown names).
        init?(parameter: String?) {
            guard let parameter else {
                self = .md5
                return
            }
            guard let algorithm = Self.allCases.first(where: { $0.rawValue.lowercased() == parameter.lowercased() }) else { return nil }
            self = algorithm
        }

        /// Whether A1 is computed per session (`-sess`, §3.4.2).
        var isSession: Bool { self == .md5Session || self == .sha256Session }

        /// Whether the hash is SHA-256 (preferred to MD5 when a server offers both, §3.7).
        var isSHA256: Bool { self == .sha256 || self == .sha256Session }

        /// H(data) as lower-case hex.
        func hash(_ text: String) -> String {
            switch self {
            case .md5, .md5Session: Digests.md5Hex(Data(text.utf8))
            case .sha256, .sha256Session: Digests.sha256Hex(Data(text.utf8))
            }
        }
    }

    /// The protection space's realm.
    var realm: String
    /// The server's nonce.
    var nonce: String
    /// The opaque value to echo, if any.
    var opaque: String?
    /// The hash algorithm.
    var algorithm: Algorithm
    /// The `algorithm` parameter as the server spelled it, echoed back; `nil` when it was absent.
    var algorithmParameter: String?
    /// Whether the server offered `qop=auth`; `false` for an RFC 2069 challenge without `qop`.
    var usesQualityOfProtection: Bool
    /// `stale=true`: the nonce expired but the credentials were right (§3.3).
    var isStale: Bool
    /// `userhash=true`: the user name is sent hashed (§3.4.4).
    var hashesUserName: Bool

    /// Why a digest challenge cannot be answered.
    enum Unusable: Error, Equatable {
        /// Not a Digest challenge, or one without realm or nonce.
        case malformed
        /// An algorithm Courier does not implement.
        case unsupportedAlgorithm
        /// The server's `qop` options lack `auth`: typically only `auth-int` (integrity over the
        /// body), which Courier does not implement; RFC 7616 gives no fallback, so the challenge
        /// cannot be answered.
        case unsupportedQualityOfProtection
    }

    /// The Digest challenge in `challenge`.
    /// - Throws: ``Unusable`` when it is not one Courier can answer.
    init(_ challenge: AuthenticationChallenge) throws(Unusable) {
        guard challenge.scheme == "digest", let realm = challenge.realm, let nonce = challenge.parameter("nonce"), !nonce.isEmpty else {
            throw .malformed
        }
        let algorithmParameter = challenge.parameter("algorithm")
        guard let algorithm = Algorithm(parameter: algorithmParameter) else { throw .unsupportedAlgorithm }
        var usesQualityOfProtection = false
        if let qop = challenge.parameter("qop") {
            let options = qop.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard options.contains("auth") else { throw .unsupportedQualityOfProtection }
            usesQualityOfProtection = true
        }
        self.realm = realm
        self.nonce = nonce
        self.opaque = challenge.parameter("opaque")
        self.algorithm = algorithm
        self.algorithmParameter = algorithmParameter
        self.usesQualityOfProtection = usesQualityOfProtection
        self.isStale = challenge.parameter("stale")?.lowercased() == "true"
        self.hashesUserName = challenge.parameter("userhash")?.lowercased() == "true"
    }

    /// The `Authorization: Digest ...` value for one request (§3.4).
    /// - Parameters:
    ///   - credentials: The user and password (UTF-8, §3.4.4 and `charset=UTF-8`).
    ///   - method: The request method (`GET`).
    ///   - requestTarget: The request-target as sent (`/dir/index.html?x=1`), the `uri` parameter.
    ///   - nonceCount: This request's count of uses of `nonce` (1 for the first).
    ///   - clientNonce: The cnonce (ignored without qop).
    /// - Returns: The field value.
    func authorization(credentials: PasswordCredentials, method: String, requestTarget: String, nonceCount: UInt32, clientNonce: String) -> String {
        let nc = String(nonceCount, radix: 16).leftPadded(to: 8)
        let response = responseValue(
            credentials: credentials, method: method, requestTarget: requestTarget, nc: nc, clientNonce: clientNonce)
        var fields: [String] = []
        if hashesUserName {
            fields.append("username=\(AuthenticationChallenge.quoted(algorithm.hash("\(credentials.user):\(realm)")))")
        } else if credentials.user.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) {
            fields.append("username=\(AuthenticationChallenge.quoted(credentials.user))")
        } else {
            // §3.4.4: a name outside ASCII goes in username* (RFC 8187 ext-value).
            fields.append("username*=UTF-8''\(Self.extValueEncoded(credentials.user))")
        }
        fields.append("realm=\(AuthenticationChallenge.quoted(realm))")
        fields.append("uri=\(AuthenticationChallenge.quoted(requestTarget))")
        if let algorithmParameter { fields.append("algorithm=\(algorithmParameter)") }
        fields.append("nonce=\(AuthenticationChallenge.quoted(nonce))")
        if usesQualityOfProtection {
            fields.append("nc=\(nc)")
            fields.append("cnonce=\(AuthenticationChallenge.quoted(clientNonce))")
            fields.append("qop=auth")
        }
        fields.append("response=\(AuthenticationChallenge.quoted(response))")
        if let opaque { fields.append("opaque=\(AuthenticationChallenge.quoted(opaque))") }
        if hashesUserName { fields.append("userhash=true") }
        return "Digest " + fields.joined(separator: ", ")
    }

    /// The `response` parameter (§3.4.1):
    /// `KD(H(A1), nonce:nc:cnonce:qop:H(A2))`, or `KD(H(A1), nonce:H(A2))` without qop (RFC 2069).
    func responseValue(credentials: PasswordCredentials, method: String, requestTarget: String, nc: String, clientNonce: String) -> String {
        var a1Hash = algorithm.hash("\(credentials.user):\(realm):\(credentials.password)")
        if algorithm.isSession {
            a1Hash = algorithm.hash("\(a1Hash):\(nonce):\(clientNonce)")
        }
        let a2Hash = algorithm.hash("\(method):\(requestTarget)")
        if usesQualityOfProtection {
            return algorithm.hash("\(a1Hash):\(nonce):\(nc):\(clientNonce):auth:\(a2Hash)")
        }
        return algorithm.hash("\(a1Hash):\(nonce):\(a2Hash)")
    }

    /// RFC 8187 value-chars: attr-char kept, every other UTF-8 byte percent-encoded.
    static func extValueEncoded(_ text: String) -> String {
        let attributeCharacters = Set("!#$&+-.^_`|~".utf8)
        var result = ""
        for byte in text.utf8 {
            let isAlphanumeric = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            if isAlphanumeric || attributeCharacters.contains(byte) {
                result.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }
}

extension String {
    /// The string with leading `0`s up to `length` characters.
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}
