import NIOSSL

/// A certificate chain and private key a ``TestServer`` speaks https with.
public struct TLSIdentity: Sendable {
    /// The server's certificate chain, PEM, leaf first.
    public var certificateChainPEM: String
    /// The private key of the leaf certificate, PEM.
    public var privateKeyPEM: String

    /// Creates an identity from PEM text.
    public init(certificateChainPEM: String, privateKeyPEM: String) {
        self.certificateChainPEM = certificateChainPEM
        self.privateKeyPEM = privateKeyPEM
    }

    func makeContext() throws -> NIOSSLContext {
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8)).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        let configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        return try NIOSSLContext(configuration: configuration)
    }

    /// A server certificate for `127.0.0.1` and `localhost` issued by ``demoCertificateAuthorityPEM``,
    /// valid until 2126. For the demo and tests only: its private key is public (it is right here).
    public static let demo = TLSIdentity(certificateChainPEM: """
-----BEGIN CERTIFICATE-----
MIIBzTCCAXSgAwIBAgIUdKT5WUOtOZBAFjFbA6u9gNd9TdcwCgYIKoZIzj0EAwIw
JjEkMCIGA1UEAwwbQ291cmllciBEZW1vIENBICh0ZXN0IG9ubHkpMCAXDTI2MTEy
NzIzMjUwMloYDzIxMjYxMTAzMjMyNTAyWjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEw
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQprnzGo2mxgmRGiCkPywdU2JkfSnMZ
s6E56JH6OytbNk7yogO3UExsVbLMtz1E/23AcEc7f+vfe0Fti2xYbu9No4GPMIGM
MAkGA1UdEwQCMAAwDgYDVR0PAQH/BAQDAgeAMBMGA1UdJQQMMAoGCCsGAQUFBwMB
MBoGA1UdEQQTMBGHBH8AAAGCCWxvY2FsaG9zdDAdBgNVHQ4EFgQU4yv3neQTDbC9
GvG9NYmf332gxu8wHwYDVR0jBBgwFoAU2iJTWfxGE6DUZCJsq+rQu4tjhGwwCgYI
KoZIzj0EAwIDRwAwRAIgQ2C46Jiaxqvh8J+rUBwRPBFIJd7ML8RTBJTHFbAHGzoC
IBdayo31wRZzNYdtvmrPrhpZ/1KQQe9RB5o5AuiLI20f
-----END CERTIFICATE-----
""", privateKeyPEM: """
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgRyT9IrwVMvEa8EyH
foxlCgOkfjbAIzIE+EJSXCgtcFmhRANCAAQprnzGo2mxgmRGiCkPywdU2JkfSnMZ
s6E56JH6OytbNk7yogO3UExsVbLMtz1E/23AcEc7f+vfe0Fti2xYbu9N
-----END PRIVATE KEY-----
""")

    /// The public-key pin of ``demo``'s certificate (SPKI SHA-256, `sha256/…`).
    public static let demoPin = "sha256/SH/6awOyHEZNCZmSgY8tQ8RQzLPUNpY4ecyKdxaNZtM="

    /// The certificate of the test-only CA that issued ``demo`` (trust it to reach a server that uses it).
    public static let demoCertificateAuthorityPEM = """
-----BEGIN CERTIFICATE-----
MIIBsjCCAVmgAwIBAgIUNGdwF7ARxbPRWJt/x4DQPt7RNr8wCgYIKoZIzj0EAwIw
JjEkMCIGA1UEAwwbQ291cmllciBEZW1vIENBICh0ZXN0IG9ubHkpMCAXDTI2MTEy
NzIzMjUwMloYDzIxMjYxMTAzMjMyNTAyWjAmMSQwIgYDVQQDDBtDb3VyaWVyIERl
bW8gQ0EgKHRlc3Qgb25seSkwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAARTKRb9
SwrUvRHP9I5TwA2+XC0tuxpYI4PF925hYN+Q8N1uWRlVMLOHVbcfj3F+y7tYXG6G
NurZ+sCfx62F9dpho2MwYTAdBgNVHQ4EFgQU2iJTWfxGE6DUZCJsq+rQu4tjhGww
HwYDVR0jBBgwFoAU2iJTWfxGE6DUZCJsq+rQu4tjhGwwDwYDVR0TAQH/BAUwAwEB
/zAOBgNVHQ8BAf8EBAMCAQYwCgYIKoZIzj0EAwIDRwAwRAIgcgRsZmrfgf4msjCU
n+JYp7wnLX0QUlh74ckNoUhKXG8CIFTcn8YIBNMo5Z6KbmWfEQwS09PYx6LfqF5B
El8E8h7t
-----END CERTIFICATE-----
"""
}
