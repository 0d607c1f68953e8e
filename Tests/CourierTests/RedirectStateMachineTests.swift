import Foundation
import Testing
@testable import Courier

/// Tier 1: redirect decisions, response by response.
@Suite("RedirectStateMachine")
struct RedirectStateMachineTests {
    private func request(
        _ url: String, method: HTTPRequest.Method = .get, body: Data? = nil, headers: HTTPFields = [:],
        policy: RedirectPolicy = .follow()
    ) -> PreparedRequest {
        PreparedRequest(
            method: method, url: URL(string: url)!, headers: headers, body: body, options: TransportOptions(),
            redirects: policy, maximumBodySize: 1 << 20, totalTimeout: nil, logger: .courierSilent)
    }

    private func location(_ value: String) -> HTTPFields { [.location: value] }

    @Test func nonRedirectsAreDelivered() {
        var machine = RedirectStateMachine(request: request("http://a/x"))
        for status in [200, 204, 300, 304, 404, 500] {
            guard case .deliver = machine.receivedResponse(status: status, headers: location("/y")) else {
                Issue.record("status \(status) was not delivered"); return
            }
        }
        guard case .deliver = machine.receivedResponse(status: 302, headers: [:]) else {
            Issue.record("a redirect without Location is a response"); return
        }
    }

    @Test func relativeLocationsResolveAgainstTheCurrentURLAndTheChainIsKept() throws {
        var machine = RedirectStateMachine(request: request("http://a/dir/x?q=1"))
        guard case .follow(let next) = machine.receivedResponse(status: 302, headers: location("y")) else {
            Issue.record("not followed"); return
        }
        #expect(next.url.absoluteString == "http://a/dir/y")
        guard case .follow(let third) = machine.receivedResponse(status: 301, headers: location("/root")) else {
            Issue.record("not followed"); return
        }
        #expect(third.url.absoluteString == "http://a/root")
        #expect(machine.chain.map(\.statusCode) == [302, 301])
        #expect(machine.chain.map(\.url.absoluteString) == ["http://a/dir/x?q=1", "http://a/dir/y"])
        #expect(machine.originalURL.absoluteString == "http://a/dir/x?q=1")
    }

    @Test func seeOtherAndPostRedirectsBecomeGETWithoutBody() {
        for status in [301, 302, 303] {
            var machine = RedirectStateMachine(request: request(
                "http://a/form", method: .post, body: Data("x=1".utf8),
                headers: [.contentType: "application/x-www-form-urlencoded", .accept: "*/*"]))
            guard case .follow(let next) = machine.receivedResponse(status: status, headers: location("/done")) else {
                Issue.record("\(status) not followed"); continue
            }
            #expect(next.method == .get)
            #expect(next.body == nil)
            #expect(next.headers[.contentType] == nil)
            #expect(next.headers[.accept] == "*/*")
        }
    }

    @Test func temporaryAndPermanentRedirectsKeepMethodAndBody() {
        for status in [307, 308] {
            var machine = RedirectStateMachine(request: request("http://a/up", method: .put, body: Data("b".utf8)))
            guard case .follow(let next) = machine.receivedResponse(status: status, headers: location("/up2")) else {
                Issue.record("\(status) not followed"); continue
            }
            #expect(next.method == .put)
            #expect(next.body == Data("b".utf8))
        }
    }

    @Test func headStaysHeadOnSeeOther() {
        var machine = RedirectStateMachine(request: request("http://a/x", method: .head))
        guard case .follow(let next) = machine.receivedResponse(status: 303, headers: location("/y")) else {
            Issue.record("not followed"); return
        }
        #expect(next.method == .head)
    }

    @Test func credentialsAreDroppedOnCrossOriginHopsOnly() {
        let secrets: HTTPFields = [.authorization: "Bearer s3cret", .cookie: "session=1", .proxyAuthorization: "Basic eA==", .accept: "a"]
        var same = RedirectStateMachine(request: request("https://a/x", headers: secrets))
        guard case .follow(let kept) = same.receivedResponse(status: 302, headers: location("https://a:443/y")) else {
            Issue.record("not followed"); return
        }
        #expect(kept.headers[.authorization] == "Bearer s3cret")
        #expect(kept.headers[.cookie] == "session=1")

        for target in ["https://b/y", "http://a/y", "https://a:8443/y"] {
            var cross = RedirectStateMachine(request: request("https://a/x", headers: secrets, policy: .follow(allowsInsecureRedirects: true)))
            guard case .follow(let next) = cross.receivedResponse(status: 302, headers: location(target)) else {
                Issue.record("\(target) not followed"); continue
            }
            #expect(next.headers[.authorization] == nil, "\(target)")
            #expect(next.headers[.cookie] == nil, "\(target)")
            #expect(next.headers[.proxyAuthorization] == nil, "\(target)")
            #expect(next.headers[.accept] == "a")
        }
    }

    @Test func httpsToHttpIsRefusedUnlessAllowed() {
        var strict = RedirectStateMachine(request: request("https://a/x"))
        guard case .fail(let error) = strict.receivedResponse(status: 302, headers: location("http://a/y")) else {
            Issue.record("insecure redirect followed"); return
        }
        #expect(error.code == .insecureRedirect)
        var lenient = RedirectStateMachine(request: request("https://a/x", policy: .follow(allowsInsecureRedirects: true)))
        guard case .follow = lenient.receivedResponse(status: 302, headers: location("http://a/y")) else {
            Issue.record("allowed insecure redirect not followed"); return
        }
    }

    @Test func theLimitStopsLoops() {
        var machine = RedirectStateMachine(request: request("http://a/loop", policy: .follow(maximum: 3)))
        for _ in 0..<3 {
            guard case .follow = machine.receivedResponse(status: 302, headers: location("/loop")) else {
                Issue.record("stopped early"); return
            }
        }
        guard case .fail(let error) = machine.receivedResponse(status: 302, headers: location("/loop")) else {
            Issue.record("loop not stopped"); return
        }
        #expect(error.code == .tooManyRedirects)
        #expect(error.message.contains("loop"))
    }

    @Test func disabledPolicyDeliversTheRedirect() {
        var machine = RedirectStateMachine(request: request("http://a/x", policy: .disabled))
        guard case .deliver = machine.receivedResponse(status: 302, headers: location("/y")) else {
            Issue.record("followed with redirects disabled"); return
        }
    }

    @Test func unsupportedOrBrokenLocationsFail() {
        var ftp = RedirectStateMachine(request: request("http://a/x"))
        guard case .fail(let error) = ftp.receivedResponse(status: 302, headers: location("ftp://a/file")) else {
            Issue.record("ftp followed"); return
        }
        #expect(error.code == .invalidURL)
        var broken = RedirectStateMachine(request: request("http://a/x"))
        guard case .fail(let brokenError) = broken.receivedResponse(status: 302, headers: location("http://")) else {
            Issue.record("hostless location followed"); return
        }
        #expect(brokenError.code == .invalidResponse)
    }
}
