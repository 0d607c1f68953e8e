import ArgumentParser
import Courier
import Foundation

/// TLS trust, client certificates and HTTP versions for every command that sends a request, spelled as
/// curl spells them.
struct ConnectionOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Trust only the CA certificates in this PEM or DER file (curl's --cacert: the system's are not used).",
                               valueName: "file"))
    var cacert: String?

    @Option(help: ArgumentHelp("A public-key pin for the URL's host, sha256/ and the Base64 SHA-256 of the server key's "
        + "SubjectPublicKeyInfo. Repeatable (a backup key); the server must show one of them.", valueName: "pin"))
    var pin: [String] = []

    @Option(help: ArgumentHelp("A client certificate (mutual TLS): a PEM chain with --key, or a PKCS#12 bundle (.p12, .pfx).",
                               valueName: "file"))
    var cert: String?

    @Option(help: ArgumentHelp("The PEM private key of --cert.", valueName: "file"))
    var key: String?

    @Option(help: ArgumentHelp("The passphrase of --key or of a PKCS#12 --cert. Prefer COURIER_CERT_PASSWORD: a command line "
        + "is visible to other users.", valueName: "phrase"))
    var pass: String?

    @Flag(name: .customLong("http1.1"), help: "Speak HTTP/1.1 only (by default https offers HTTP/2 and the server picks).")
    var http1 = false

    @Flag(name: [.customShort("k"), .long],
          help: ArgumentHelp("Do not verify the URL's host's certificate: for a development server only. Says so on stderr."))
    var insecure = false

    @Option(help: ArgumentHelp("Go through this proxy: http://[user:password@]host[:port] (CONNECT) or socks5://host[:port]; "
        + "\"\" for none. Without it, the environment's http_proxy, HTTPS_PROXY, ALL_PROXY and NO_PROXY are used, as curl does.",
        valueName: "url"))
    var proxy: String?

    @Option(help: ArgumentHelp("Hosts reached without the proxy, comma-separated: a name covers its subdomains; '*' for every host.",
                               valueName: "hosts"))
    var noproxy: String?

    /// The proxy settings: `--proxy`, else the environment's; `--noproxy` replaces the bypass list.
    func proxySettings(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CLIFailure) -> ProxySettings {
        var settings: ProxySettings
        if let proxy {
            if proxy.isEmpty {
                settings = .none
            } else {
                guard let parsed = Proxy(url: proxy) else {
                    throw CLIFailure.usage("--proxy needs http://[user:password@]host[:port] or socks5://host[:port]")
                }
                settings = .all(parsed)
            }
        } else {
            settings = .fromEnvironment(environment)
        }
        if let noproxy {
            settings.noProxy = noproxy.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        return settings
    }

    /// The trust policy for a request to `url`; a malformed option is a usage error. `warn` hears what
    /// must be said on standard error.
    func trust(for url: String, warn: (String) -> Void) throws(CLIFailure) -> TrustPolicy {
        let host = URL(string: url)?.host ?? ""
        var policy = TrustPolicy.system
        if let cacert { policy.roots = .only([.file(cacert)]) }
        if !pin.isEmpty {
            do { policy.pins = [try CertificatePin(host: host, pin)] } catch { throw CLIFailure.usage("--pin: \(error.message)") }
        }
        let passphrase = pass ?? ProcessInfo.processInfo.environment["COURIER_CERT_PASSWORD"]
        switch (cert, key) {
        case (let cert?, let key?):
            policy.clientIdentity = .pem(certificateChain: cert, privateKey: key, passphrase: passphrase)
        case (let cert?, nil):
            let lowered = cert.lowercased()
            guard lowered.hasSuffix(".p12") || lowered.hasSuffix(".pfx") else {
                throw CLIFailure.usage("--cert needs --key, unless it is a PKCS#12 bundle (.p12, .pfx)")
            }
            policy.clientIdentity = .pkcs12(cert, passphrase: passphrase)
        case (nil, .some):
            throw CLIFailure.usage("--key needs --cert")
        case (nil, nil):
            break
        }
        if insecure {
            warn("courier: warning: --insecure: the certificate of \(host) is not verified; anyone on the network can pose as it")
            policy = policy.insecurelyTrusting(hosts: [host])
        }
        return policy
    }

    /// The HTTP versions to offer.
    var httpVersions: HTTPVersions { http1 ? .http1Only : .automatic }
}
