import Crypto
import Foundation
import NIOCore
import NIOSSL

// The policy applied with SwiftNIO SSL: the TLS configuration every connection to a host is made with,
// and the pin check run on that very connection once its handshake (chain and host name verified) is
// done, before any request is written to it. Both transports (async-http-client's pool and the
// interim-response connections) use these two functions.
extension TrustPolicy {
    /// The TLS configuration for connections to `host`.
    /// - Throws: ``NetworkError/Code/invalidConfiguration`` for a certificate, key or bundle that cannot
    ///   be read or parsed.
    func tlsConfiguration(for host: String) throws(NetworkError) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch roots {
        case .system: break
        case .systemAnd(let certificates): tls.additionalTrustRoots = [.certificates(try Self.load(certificates))]
        case .only(let certificates): tls.trustRoots = .certificates(try Self.load(certificates))
        }
        if isInsecure(host) { tls.certificateVerification = .none }
        if let clientIdentity, presentsIdentity(to: host) {
            let (chain, key) = try clientIdentity.load()
            tls.certificateChain = chain.map { .certificate($0) }
            tls.privateKey = .privateKey(key)
        }
        return tls
    }

    static func load(_ certificates: [TrustCertificate]) throws(NetworkError) -> [NIOSSLCertificate] {
        var loaded: [NIOSSLCertificate] = []
        for certificate in certificates {
            do {
                switch certificate.source {
                case .pem(let data): loaded += try NIOSSLCertificate.fromPEMBytes(Array(data))
                case .der(let data): loaded.append(try NIOSSLCertificate(bytes: Array(data), format: .der))
                case .file(let path):
                    let data = try Data(contentsOf: URL(fileURLWithPath: path))
                    loaded += Self.looksLikePEM(data)
                        ? try NIOSSLCertificate.fromPEMBytes(Array(data)) : [try NIOSSLCertificate(bytes: Array(data), format: .der)]
                }
            } catch {
                throw NetworkError(.invalidConfiguration, "a trusted certificate could not be read: \(Self.name(of: certificate)): \(error)",
                                   underlying: error)
            }
        }
        guard !loaded.isEmpty || certificates.isEmpty else {
            throw NetworkError(.invalidConfiguration, "the trusted certificates hold no certificate")
        }
        return loaded
    }

    private static func looksLikePEM(_ data: Data) -> Bool {
        data.prefix(4096).range(of: Data("-----BEGIN".utf8)) != nil
    }

    private static func name(of certificate: TrustCertificate) -> String {
        switch certificate.source {
        case .pem: "PEM bytes"
        case .der: "DER bytes"
        case .file(let path): path
        }
    }
}

extension ClientIdentity {
    func load() throws(NetworkError) -> (chain: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        do {
            switch source {
            case .pem(let chainPath, let keyPath, let passphrase):
                let chain = try NIOSSLCertificate.fromPEMFile(chainPath)
                guard !chain.isEmpty else { throw NetworkError(.invalidConfiguration, "\(chainPath) holds no certificate") }
                let key = if let passphrase {
                    try NIOSSLPrivateKey(file: keyPath, format: .pem) { (set: NIOSSLPassphraseSetter<[UInt8]>) in set(Array(passphrase.utf8)) }
                } else {
                    try NIOSSLPrivateKey(file: keyPath, format: .pem)
                }
                return (chain, key)
            case .pkcs12(let path, let passphrase):
                let bundle = try NIOSSLPKCS12Bundle(file: path, passphrase: passphrase.map { Array($0.utf8) })
                return (bundle.certificateChain, bundle.privateKey)
            }
        } catch let error as NetworkError {
            throw error
        } catch {
            throw NetworkError(.invalidConfiguration, "the client certificate could not be loaded (\(self)): \(error)", underlying: error)
        }
    }
}

/// The pins a connection must satisfy, and the check.
struct PinCheck: Sendable, Hashable {
    /// The accepted SHA-256 digests of SubjectPublicKeyInfo.
    let pins: Set<Data>

    /// The server's key did not match: what it showed (`sha256/…`), for the message.
    struct Mismatch: Error {
        let seen: [String]
        let pins: [String]
    }

    /// Checks the leaf certificate of the TLS connection on `channel` (its handshake done).
    func verify(_ channel: any Channel) throws {
        guard let handler = try? channel.pipeline.syncOperations.handler(type: NIOSSLHandler.self) else {
            // No TLS on this connection (plain http): a pinned host is never reached that way.
            throw Mismatch(seen: ["no TLS"], pins: pinTexts)
        }
        let seen = handler.peerCertificate.flatMap { try? Self.digest(of: $0) }
        guard let seen, pins.contains(seen) else { throw Mismatch(seen: seen.map { [CertificatePin.text(of: $0)] } ?? [], pins: pinTexts) }
    }

    /// The sorted pins as `sha256/…`.
    var pinTexts: [String] { pins.map(CertificatePin.text(of:)).sorted() }

    /// SHA-256 of the certificate's SubjectPublicKeyInfo (DER).
    static func digest(of certificate: NIOSSLCertificate) throws -> Data {
        Data(SHA256.hash(data: try certificate.extractPublicKey().toSPKIBytes()))
    }

    /// The error a request to `url` fails with when the server's key matched no pin.
    static func networkError(_ mismatch: Mismatch, host: String, url: String) -> NetworkError {
        let seen = mismatch.seen.isEmpty ? "no certificate" : mismatch.seen.joined(separator: ", ")
        return NetworkError(
            .tls, "certificate pinning failed for \(host): the server's key \(seen) matches none of the pins \(mismatch.pins.joined(separator: ", "))",
            url: url, underlying: mismatch)
    }
}
