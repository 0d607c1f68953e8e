import Foundation

/// A throwaway public-key infrastructure made with the `openssl` command at test time: a CA, a server
/// certificate for 127.0.0.1 and localhost signed by it, a client certificate (PEM and PKCS#12) signed
/// by it, and a second CA that signed nothing here. P-256 keys, valid for two days, in a temporary
/// folder removed by ``remove()``.
struct TestPKI {
    let folder: URL
    var caCertificate: String { path("ca.pem") }
    var otherCACertificate: String { path("other-ca.pem") }
    var serverCertificate: String { path("server.pem") }
    var serverKey: String { path("server.key") }
    var clientCertificate: String { path("client.pem") }
    var clientKey: String { path("client.key") }
    var clientBundle: String { path("client.p12") }
    static let bundlePassphrase = "p12-pass"
    /// The server key's pin, computed by openssl as the docs say to (`sha256/` + Base64 of the SPKI's SHA-256).
    let serverPin: String

    static var openssl: String? {
        ["/usr/bin/openssl", "/usr/local/bin/openssl", "/opt/homebrew/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Makes one, running openssl off the cooperative pool (a test never blocks one of its two threads).
    static func make() async throws -> TestPKI {
        try await offThePool { try makeNow() }
    }

    private static func makeNow() throws -> TestPKI {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("courier-pki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        func run(_ script: String) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-ec", script]
            process.currentDirectoryURL = folder
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let failure = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: "openssl failed: \(failure)"])
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let key = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
        _ = try run("""
            for ca in ca other-ca; do
              openssl req -x509 \(key) -keyout $ca.key -out $ca.pem -days 2 -subj "/CN=Courier Test $ca" \\
                -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
            done
            printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nbasicConstraints=CA:FALSE\\nextendedKeyUsage=serverAuth\\n' > server.ext
            printf 'basicConstraints=CA:FALSE\\nextendedKeyUsage=clientAuth\\n' > client.ext
            for leaf in server client; do
              openssl req \(key) -keyout $leaf.key -out $leaf.csr -subj "/CN=courier-$leaf"
              openssl x509 -req -in $leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $leaf.pem -days 2 -extfile $leaf.ext
            done
            openssl pkcs12 -export -in client.pem -inkey client.key -out client.p12 -passout pass:\(bundlePassphrase) \\
              -certpbe PBE-SHA1-3DES -keypbe PBE-SHA1-3DES -macalg sha1
            """)
        let pin = try run("openssl x509 -in server.pem -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64")
        return TestPKI(folder: folder, serverPin: "sha256/" + pin)
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }

    private func path(_ name: String) -> String { folder.appendingPathComponent(name).path }
}
