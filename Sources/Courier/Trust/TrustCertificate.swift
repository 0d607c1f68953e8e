public import Foundation

/// A certificate for a ``TrustPolicy``: PEM (one or more certificates) or DER bytes, or a file holding
/// either. A file is read when the first connection that needs it is made, so a policy can be built
/// before the file exists; a file or bytes that do not parse fail that request with
/// ``NetworkError/Code/invalidConfiguration``.
public struct TrustCertificate: Sendable, Hashable {
    enum Source: Sendable, Hashable {
        case pem(Data)
        case der(Data)
        case file(String)
    }

    let source: Source

    /// PEM text: one or more `-----BEGIN CERTIFICATE-----` blocks.
    public static func pem(_ data: Data) -> TrustCertificate { TrustCertificate(source: .pem(data)) }
    /// PEM text: one or more `-----BEGIN CERTIFICATE-----` blocks.
    public static func pem(_ text: String) -> TrustCertificate { TrustCertificate(source: .pem(Data(text.utf8))) }
    /// One certificate in DER.
    public static func der(_ data: Data) -> TrustCertificate { TrustCertificate(source: .der(data)) }
    /// A PEM or DER file (the format is told by its content).
    public static func file(_ path: String) -> TrustCertificate { TrustCertificate(source: .file(path)) }
}

/// The certificate and private key an engine presents to servers that ask for one (mutual TLS).
///
/// The passphrase is kept in memory only, never written or logged (``description`` masks it).
public struct ClientIdentity: Sendable, Hashable, CustomStringConvertible {
    enum Source: Sendable, Hashable {
        case pem(certificateChain: String, privateKey: String, passphrase: String?)
        case pkcs12(path: String, passphrase: String?)
    }

    let source: Source

    /// A PEM certificate chain (the client certificate first) and its PEM private key, from files.
    /// - Parameters:
    ///   - certificateChain: The path of the PEM certificate chain.
    ///   - privateKey: The path of the PEM private key.
    ///   - passphrase: The key's passphrase when it is encrypted.
    public static func pem(certificateChain: String, privateKey: String, passphrase: String? = nil) -> ClientIdentity {
        ClientIdentity(source: .pem(certificateChain: certificateChain, privateKey: privateKey, passphrase: passphrase))
    }

    /// A PKCS#12 (`.p12`, `.pfx`) bundle holding the certificate chain and the key.
    /// - Parameters:
    ///   - path: The bundle's path.
    ///   - passphrase: Its passphrase, if any.
    public static func pkcs12(_ path: String, passphrase: String? = nil) -> ClientIdentity {
        ClientIdentity(source: .pkcs12(path: path, passphrase: passphrase))
    }

    /// The files, with any passphrase masked.
    public var description: String {
        switch source {
        case .pem(let chain, let key, let passphrase):
            "ClientIdentity(certificateChain: \(chain), privateKey: \(key)\(passphrase == nil ? "" : ", passphrase: ***"))"
        case .pkcs12(let path, let passphrase):
            "ClientIdentity(pkcs12: \(path)\(passphrase == nil ? "" : ", passphrase: ***"))"
        }
    }
}
