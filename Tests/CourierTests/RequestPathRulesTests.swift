import Foundation
import HTTPTypes
import Testing
@testable import Courier

/// Tier 1: the request path's rules without sockets: one origin test, the chain rule for credentials,
/// what a URL rewrite drops, which tokens are the authenticator's, what a retry may repeat, and a
/// bounded wait.
@Suite("Request path rules")
struct RequestPathRulesTests {
    private func url(_ text: String) -> URL { URL(string: text)! }

    @Test func oneOriginRule() {
        #expect(Origin.same(url("https://API.example.com/a"), url("https://api.example.com:443/b")))
        #expect(!Origin.same(url("https://api.example.com/"), url("http://api.example.com/")))
        #expect(!Origin.same(url("https://api.example.com/"), url("https://api.example.com:8443/")))
        #expect(!Origin.same(url("https://api.example.com/"), url("https://api.example.com.evil/")))
        #expect(Origin.same(url("http://[::1]:8080/"), url("http://[::1]:8080/x")))
        #expect(Origin(url("https://Api.Example.com/x"))?.description == "https://api.example.com:443")
        #expect(OutboxRecord.origin(of: url("http://api.example.com/x")) == "http://api.example.com:80", "the outbox rows' form is kept")
    }

    @Test func credentialsFollowTheChainNotTheHop() {
        let home = "https://api.example.com:443"
        func cross(_ current: String, original: String, visited: [String] = []) -> Bool {
            InterceptorContext.crossOrigin(url: url(current), originalURL: url(original), visited: visited.map(url), engineOrigin: home)
        }
        #expect(!cross("https://api.example.com/a", original: "https://api.example.com/a"))
        #expect(cross("https://cdn.example.com/a", original: "https://cdn.example.com/a"), "an absolute URL elsewhere")
        #expect(cross("https://cdn.example.com/a", original: "https://api.example.com/a", visited: ["https://api.example.com/a"]), "redirected away")
        #expect(cross("https://api.example.com/orders", original: "https://evil.example/x", visited: ["https://evil.example/x"]),
                "a foreign origin redirecting to the API")
        #expect(cross("https://api.example.com/back", original: "https://api.example.com/a",
                      visited: ["https://api.example.com/a", "https://cdn.example.com/b"]), "back after leaving")
        #expect(!cross("https://api.example.com/c", original: "https://api.example.com/a", visited: ["https://api.example.com/a", "https://api.example.com/b"]))
        // Without an engine origin, the operation's URL is the reference.
        #expect(!InterceptorContext.crossOrigin(url: url("https://x.example/2"), originalURL: url("https://x.example/1"), visited: [url("https://x.example/1")], engineOrigin: nil))
        #expect(InterceptorContext.crossOrigin(url: url("https://y.example/2"), originalURL: url("https://x.example/1"), visited: [url("https://x.example/1")], engineOrigin: nil))
        // A context made by hand (for testing an interceptor) compares its URL with the original.
        #expect(!InterceptorContext(originalURL: url("https://a.example/")).isCrossOrigin)
        #expect(InterceptorContext(originalURL: url("https://a.example/"), url: url("https://b.example/")).isCrossOrigin)
    }

    @Test func aRewriteDropsOnlyTheCredentialsItCarried() {
        let before: HTTPFields = [.authorization: "Bearer api", .cookie: "s=1", .accept: "application/json"]
        var after = before
        after[HTTPField.Name("X-Trace")!] = "1"
        let kept = InterceptorChain.droppingCarriedCredentials(after, before: before, names: CredentialFields.names)
        #expect(kept[.authorization] == nil && kept[.cookie] == nil)
        #expect(kept[.accept] == "application/json" && kept[HTTPField.Name("X-Trace")!] == "1")
        var own = before
        own[.authorization] = "Bearer partner"
        #expect(InterceptorChain.droppingCarriedCredentials(own, before: before, names: CredentialFields.names)[.authorization] == "Bearer partner")
        let sensitive = InterceptorChain.droppingCarriedCredentials(
            [HTTPField.Name("X-API-Key")!: "k"], before: [HTTPField.Name("X-API-Key")!: "k"], names: ["x-api-key"])
        #expect(sensitive.isEmpty, "the engine's sensitive names count as credentials")
    }

    @Test func onlyTheAuthenticatorsOwnTokensAreRefreshedOrRetried() {
        let now = ContinuousClock.now
        var machine = TokenRefreshStateMachine(token: "t1")
        #expect(machine.refused(sent: "partner", startedAt: now, now: now) == .notOurs)
        #expect(machine.refused(sent: "t1", startedAt: now, now: now) == .startRefresh)
        #expect(machine.refused(sent: "partner", startedAt: now, now: now) == .notOurs, "not even while a refresh runs")
        machine.refreshSucceeded("t2", at: now)
        #expect(machine.refused(sent: "t1", startedAt: now, now: now) == .retryNow, "an earlier token of its own: retry with the current one")
        machine.setToken("t3")
        #expect(machine.refused(sent: "t2", startedAt: now, now: now) == .retryNow)
        for index in 0..<TokenRefreshStateMachine.rememberedTokens + 2 { machine.setToken("n\(index)") }
        #expect(machine.refused(sent: "t1", startedAt: now, now: now) == .notOurs, "a bounded memory")
        var fresh = TokenRefreshStateMachine(token: nil)
        #expect(fresh.refused(sent: nil, startedAt: now, now: now) == .startRefresh, "the first sign-in")
    }

    @Test func aRetryMayRepeatOnlyWhatMayBeRepeated() {
        func request(_ method: HTTPRequest.Method, _ headers: HTTPFields = [:]) -> PreparedRequest {
            PreparedRequest(
                method: method, url: url("https://api.example.com/orders"), headers: headers, body: nil, bodySource: nil,
                options: TransportOptions(), redirects: .follow(), maximumBodySize: 1, totalTimeout: nil, logger: .courierSilent)
        }
        #expect(!InterceptorChain.mayRepeat(request(.post)))
        #expect(InterceptorChain.mayRepeat(request(.post, [HTTPField.Name("Idempotency-Key")!: "k"])))
        #expect(InterceptorChain.mayRepeat(request(.put)) && InterceptorChain.mayRepeat(request(.get)))
        #expect(!InterceptorChain.mayRepeat(request(.patch)))
    }

    @Test func aBoundedWaitEndsAtItsDeadlineOrOnCancellation() async {
        let quick = await BoundedWait<Int>.run(until: .now + .seconds(10)) { 42 }
        guard case .value(42) = quick else { Issue.record("\(quick)"); return }
        let start = ContinuousClock.now
        let stuck = await BoundedWait<Int>.run(until: .now + .milliseconds(50)) {
            await withCheckedContinuation { (_: CheckedContinuation<Void, Never>) in }   // never returns, ignores cancellation
            return 0
        }
        guard case .timedOut = stuck else { Issue.record("\(stuck)"); return }
        #expect(ContinuousClock.now - start < .seconds(5))
        let task = Task { await BoundedWait<Int>.run(until: nil) { try? await Task.sleep(for: .seconds(3600)); return 1 } }
        try? await Task.sleep(for: .milliseconds(20))
        task.cancel()
        guard case .cancelled = await task.value else { Issue.record("not cancelled"); return }
        let already = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await BoundedWait<Int>.run(until: nil) { 1 }
        }
        let early = await already.value
        switch early {
        case .cancelled, .value: break   // either is a prompt answer: what matters is that it answered
        case .timedOut: Issue.record("timed out without a deadline")
        }
    }
}

extension RequestPathRulesTests {
    @Test func anOriginReadFromAURLIsTheOneReadFromItsComponents() {
        for text in ["https://API.example.com/a?b", "http://[::1]:8080/x", "http://[FE80::1]/",
                     "http://h%C3%A9.example/", "http://user:pw@host.example:81/p", "HTTP://Host.Example:80"] {
            let url = URL(string: text)!
            #expect(Origin(url) == URLComponents(url: url, resolvingAgainstBaseURL: true).flatMap(Origin.init), "\(text)")
        }
        let relative = URL(string: "/path", relativeTo: URL(string: "https://base.example:8443/a"))!
        #expect(Origin(relative)?.description == "https://base.example:8443")
        #expect(Origin(URL(string: "/just/a/path")!) == nil)
    }
}
