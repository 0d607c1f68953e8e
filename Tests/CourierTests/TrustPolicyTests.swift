import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// The trust policy as values (issue 25): pins and their host patterns, insecure hosts, and which
/// client a request gets; no sockets.
@Suite("Trust policy")
struct TrustPolicyTests {
    static let keyA = "sha256/" + Data(repeating: 0xA1, count: 32).base64EncodedString()
    static let keyB = "sha256/" + Data(repeating: 0xB2, count: 32).base64EncodedString()

    @Test func pinsAreSHA256DigestsInBase64() throws {
        let pin = try CertificatePin(host: "API.Example.com.", [Self.keyA, Self.keyB, Self.keyA])
        #expect(pin.hostPattern == "api.example.com")
        #expect(pin.hashes == [Data(repeating: 0xA1, count: 32), Data(repeating: 0xB2, count: 32)])
        for bad in ["sha1/" + Data(repeating: 1, count: 20).base64EncodedString(), "sha256/" + Data(repeating: 1, count: 31).base64EncodedString(),
                    "sha256/not base64!", Data(repeating: 1, count: 32).base64EncodedString()] {
            #expect(throws: NetworkError.self) { try CertificatePin(host: "api.example.com", [bad]) }
            #expect((try? CertificatePin(host: "api.example.com", [Self.keyA, bad])) == nil, "one bad pin refuses the rule: \(bad)")
        }
        do {
            _ = try CertificatePin(host: "api.example.com", [])
            Issue.record("no pins accepted")
        } catch { #expect(error.code == .invalidConfiguration) }
    }

    @Test(arguments: ["", "*", "**", "*.", "a..b", "*.*.example.com", "ex ample.com", "api.example.com/x", "*example.com", "exa*mple.com"])
    func malformedPatternsAreRefused(_ pattern: String) {
        #expect(throws: NetworkError.self) { try CertificatePin(host: pattern, [Self.keyA]) }
    }

    @Test func patternsMatchAsOkHttpReadsThem() throws {
        func matches(_ pattern: String, _ host: String) throws -> Bool {
            try TrustPolicy(pins: [CertificatePin(host: pattern, [Self.keyA])]).pinnedKeys(for: host) != nil
        }
        #expect(try matches("api.example.com", "api.example.com"))
        #expect(try matches("api.example.com", "API.EXAMPLE.COM."))
        #expect(try !matches("api.example.com", "www.api.example.com"))
        #expect(try matches("*.example.com", "www.example.com"))
        #expect(try !matches("*.example.com", "example.com"), "* is exactly one label")
        #expect(try !matches("*.example.com", "a.b.example.com"))
        #expect(try !matches("*.example.com", "wwwexample.com"))
        #expect(try matches("**.example.com", "example.com"))
        #expect(try matches("**.example.com", "a.b.example.com"))
        #expect(try !matches("**.example.com", "notexample.com"))
        #expect(try matches("127.0.0.1", "127.0.0.1"))
        #expect(try matches("::1", "[::1]"))
    }

    /// Review finding: a pin on `::1` was skipped for `[0:0:0:0:0:0:0:1]`. Every rule compares one spelling.
    @Test func everySpellingOfAnAddressIsTheSameHost() throws {
        #expect(TrustPolicy.canonicalHost("[0:0:0:0:0:0:0:1]") == "::1")
        #expect(TrustPolicy.canonicalHost("[::0:1]") == "::1")
        #expect(TrustPolicy.canonicalHost("[FE80::0001]") == "fe80::1")
        #expect(TrustPolicy.canonicalHost("127.0.0.1.") == "127.0.0.1")
        #expect(TrustPolicy.canonicalHost("API.Example.com.") == "api.example.com")
        let pinned = TrustPolicy(pins: [try CertificatePin(host: "::1", [Self.keyA])])
        for spelling in ["[::1]", "[0:0:0:0:0:0:0:1]", "[::0:1]", "0::1"] {
            #expect(pinned.pinnedKeys(for: spelling) != nil, "\(spelling)")
        }
        #expect(TrustPolicy(pins: [try CertificatePin(host: "[0:0::1]", [Self.keyA])]).pinnedKeys(for: "[::1]") != nil)
        let insecure = TrustPolicy.system.insecurelyTrusting(hosts: ["[::1]", "Dev.Local."])
        #expect(insecure.isInsecure("0:0:0:0:0:0:0:1") && insecure.isInsecure("dev.local"))
        #expect(ProxySettings(http: .socks5(host: "p"), noProxy: ["[::1]"]).proxy(for: URL(string: "http://[0::1]:8080/")!) == nil)
    }

    @Test func everyMatchingRuleAddsItsPins() throws {
        let policy = TrustPolicy(pins: [
            try CertificatePin(host: "**.example.com", [Self.keyA]),
            try CertificatePin(host: "api.example.com", [Self.keyB]),
            try CertificatePin(host: "other.org", [Self.keyB]),
        ])
        #expect(policy.pinnedKeys(for: "api.example.com") == [Data(repeating: 0xA1, count: 32), Data(repeating: 0xB2, count: 32)])
        #expect(policy.pinnedKeys(for: "cdn.example.com") == [Data(repeating: 0xA1, count: 32)])
        #expect(policy.pinnedKeys(for: "example.net") == nil)
        #expect(TrustPolicy.system.pinnedKeys(for: "api.example.com") == nil)
    }

    @Test func onlyTheNamedHostsAreNotVerified() {
        let policy = TrustPolicy.system.insecurelyTrusting(hosts: ["Dev.Internal", "localhost"])
        #expect(policy.isInsecure("dev.internal"))
        #expect(policy.isInsecure("LOCALHOST."))
        #expect(!policy.isInsecure("api.dev.internal"), "exact names, never patterns")
        #expect(!policy.isInsecure("example.com"))
        #expect(!TrustPolicy.system.isInsecure("localhost"))
        #expect(policy != .system, "an engine that trusts insecurely never shares a client or a flight with one that does not")
    }

    @Test func aPinnedHostIsReachedOverHTTPSOnlyAndGetsAClientOfItsOwn() throws {
        let policy = TrustPolicy(pins: [try CertificatePin(host: "api.example.com", [Self.keyA])])
        func request(_ url: String, _ trust: TrustPolicy) -> TransportRequest {
            TransportRequest(method: .get, url: URL(string: url)!, headers: [:], options: TransportOptions(trust: trust))
        }
        do {
            _ = try AsyncHTTPClientTransport.clientKey(for: request("http://api.example.com/x", policy))
            Issue.record("a pinned host was allowed over http")
        } catch {
            #expect(error.code == .tls)
            #expect(error.message.contains("api.example.com is pinned"))
        }
        let pinned = try AsyncHTTPClientTransport.clientKey(for: request("https://api.example.com/x", policy))
        let other = try AsyncHTTPClientTransport.clientKey(for: request("https://cdn.example.org/x", policy))
        #expect(pinned.pins == [Data(repeating: 0xA1, count: 32)])
        #expect(other.pins == nil && pinned != other)
        #expect(try AsyncHTTPClientTransport.clientKey(for: request("http://cdn.example.org/x", policy)).pins == nil)
        let plain = try AsyncHTTPClientTransport.clientKey(for: request("https://api.example.com/x", .system))
        #expect(plain == AsyncHTTPClientTransport.ClientKey(options: TransportOptions()), "the default policy: one client for every host")
    }

    @Test func unreadableCertificatesAndIdentitiesAreConfigurationErrors() {
        let missing = "/nonexistent/courier-\(UUID().uuidString).pem"
        for policy in [
            TrustPolicy(roots: .systemAnd([.file(missing)])),
            TrustPolicy(roots: .only([.pem("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")])),
            TrustPolicy(roots: .only([.der(Data([1, 2, 3]))])),
            TrustPolicy(clientIdentity: .pem(certificateChain: missing, privateKey: missing)),
            TrustPolicy(clientIdentity: .pkcs12(missing, passphrase: "secret-passphrase")),
        ] {
            var policy = policy
            policy.identityHosts = ["api.example.com"]
            do {
                _ = try policy.tlsConfiguration(for: "api.example.com")
                Issue.record("\(policy) was applied")
            } catch {
                #expect(error.code == .invalidConfiguration)
                #expect(!error.message.contains("secret-passphrase"))
            }
        }
    }

    /// Review finding: the client certificate went to any host that asked. It goes to the named hosts only,
    /// the engine's own by default.
    @Test func aClientCertificateGoesToItsHostsOnly() throws {
        let identity = ClientIdentity.pem(certificateChain: "/nonexistent/c.pem", privateKey: "/nonexistent/k.pem")
        let engine = NetworkEngine(host: "API.example.com", configuration: .init { $0.trust = TrustPolicy(clientIdentity: identity) })
        #expect(engine.configuration.trust.identityHosts == ["api.example.com"] || engine.configuration.trust.identityHosts == ["API.example.com"])
        let trust = engine.configuration.trust
        #expect(trust.presentsIdentity(to: "api.example.com") && trust.presentsIdentity(to: "API.EXAMPLE.COM."))
        #expect(!trust.presentsIdentity(to: "evil.example.com") && !trust.presentsIdentity(to: "example.com"))
        // Another host's connections are made without it: no file is even read for them.
        #expect((try? trust.tlsConfiguration(for: "cdn.example.net")) != nil)
        #expect(throws: NetworkError.self) { try trust.tlsConfiguration(for: "api.example.com") }
        func key(_ url: String) throws -> AsyncHTTPClientTransport.ClientKey {
            try AsyncHTTPClientTransport.clientKey(for: TransportRequest(method: .get, url: URL(string: url)!, options: TransportOptions(trust: trust)))
        }
        #expect(try key("https://api.example.com/a") != key("https://cdn.example.net/a"), "never one pool for both")
        var named = TrustPolicy(clientIdentity: identity)
        named.identityHosts = ["payments.internal"]
        let kept = NetworkEngine(host: "api.example.com", configuration: .init { $0.trust = named })
        #expect(kept.configuration.trust.identityHosts == ["payments.internal"], "hosts the app named are kept")
    }

    @Test func anIdentityNeverShowsItsPassphrase() {
        #expect(!"\(ClientIdentity.pkcs12("/keys/me.p12", passphrase: "hunter2"))".contains("hunter2"))
        #expect(!"\(ClientIdentity.pem(certificateChain: "c.pem", privateKey: "k.pem", passphrase: "hunter2"))".contains("hunter2"))
        #expect("\(ClientIdentity.pkcs12("/keys/me.p12", passphrase: "hunter2"))".contains("/keys/me.p12"))
    }
}
