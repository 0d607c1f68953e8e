import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
@testable import Courier

/// An HTTP/1.1 origin on 127.0.0.1 that checks Digest answers the way RFC 7616 §3.4 computes them,
/// for the Digest end-to-end tests:
///
/// - each ``Realm`` guards the paths under its prefix, offering its algorithms in the listed order
///   (one `WWW-Authenticate` line each, one nonce for all of them), optionally with `userhash=true`;
/// - an answer is accepted only if its realm, nonce (issued for that realm and not forgotten), `uri`,
///   `qop=auth`, `nc` (not used before under the nonce), user name and `response` are right;
///   anything else is challenged again with a fresh nonce and **without** `stale`;
/// - ``Options/usesPerNonce`` forgets a nonce after that many accepted uses (a restart, or another node
///   behind a balancer); ``Options/sendsNextNonce`` answers every success with
///   `Authentication-Info: nextnonce=...` and forgets the nonce just used; ``Options/unavailableFirst``
///   answers the first requests 503 with `Retry-After: 0`.
///
/// Every request is logged with what it answered and the verdict.
final class DigestOriginServer: Sendable {
    struct Realm: Sendable {
        var name: String
        var pathPrefix: String
        /// The `algorithm` values offered, in the order of the `WWW-Authenticate` lines.
        var algorithms: [String]
        var userhash = false
    }

    struct Options: Sendable {
        var realms: [Realm]
        var user = "ada"
        var password = "secret"
        var usesPerNonce: Int?
        var sendsNextNonce = false
        var unavailableFirst = 0
    }

    enum Verdict: String, Sendable {
        case accepted, challenged, rejected, unavailable, notFound
    }

    /// One request, as the server judged it.
    struct LoggedRequest: Sendable {
        var path: String
        var verdict: Verdict
        /// The answer's parameters (`realm`, `nonce`, `nc`, `algorithm`, ...), empty without one.
        var answer: [String: String]
        /// Why an answer was rejected.
        var reason: String?
        /// The nonce given back: a challenge's, or an `Authentication-Info` `nextnonce`.
        var issuedNonce: String?
    }

    private struct NonceState {
        var realm: String
        var uses = 0
        /// The `nc` values accepted under the nonce (a replay is refused).
        var counts: Set<Int> = []
    }

    private struct State {
        var nonces: [String: NonceState] = [:]
        var issued = 0
        var unavailableRemaining: Int
        var log: [LoggedRequest] = []
    }

    let options: Options
    let port: Int
    private let channel: any Channel
    private let state: NIOLockedValueBox<State>

    private init(options: Options, channel: any Channel, state: NIOLockedValueBox<State>) {
        self.options = options
        self.channel = channel
        self.state = state
        self.port = channel.localAddress?.port ?? 0
    }

    var log: [LoggedRequest] { state.withLockedValue { $0.log } }

    static func start(_ options: Options) async throws -> DigestOriginServer {
        let state = NIOLockedValueBox(State(unavailableRemaining: options.unavailableFirst))
        let box = NIOLockedValueBox<DigestOriginServer?>(nil)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(server: box))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        let server = DigestOriginServer(options: options, channel: channel, state: state)
        box.withLockedValue { $0 = server }
        return server
    }

    func shutdown() async throws { try await channel.close() }

    /// H() of an algorithm family, as lower-case hex.
    static func hash(_ algorithm: String, _ text: String) -> String {
        algorithm.uppercased().hasPrefix("SHA-256") ? Digests.sha256Hex(Data(text.utf8)) : Digests.md5Hex(Data(text.utf8))
    }

    /// The `response` RFC 7616 §3.4.1 expects (qop=auth).
    static func expectedResponse(
        algorithm: String, user: String, realm: String, password: String, method: String, uri: String, nonce: String, nc: String, cnonce: String
    ) -> String {
        var a1 = hash(algorithm, "\(user):\(realm):\(password)")
        if algorithm.lowercased().hasSuffix("-sess") { a1 = hash(algorithm, "\(a1):\(nonce):\(cnonce)") }
        let a2 = hash(algorithm, "\(method):\(uri)")
        return hash(algorithm, "\(a1):\(nonce):\(nc):\(cnonce):auth:\(a2)")
    }

    /// The status, header fields and body answering one request.
    func answer(method: String, uri: String, authorization: String?) -> (status: Int, headers: [(String, String)], body: String) {
        state.withLockedValue { state in
            if state.unavailableRemaining > 0 {
                state.unavailableRemaining -= 1
                state.log.append(LoggedRequest(path: uri, verdict: .unavailable, answer: [:]))
                return (503, [("Retry-After", "0")], "busy")
            }
            guard let realm = options.realms.first(where: { uri.hasPrefix($0.pathPrefix) }) else {
                state.log.append(LoggedRequest(path: uri, verdict: .notFound, answer: [:]))
                return (404, [], "not found")
            }
            var answer: [String: String] = [:]
            if let authorization, let parsed = AuthenticationChallenge.parse(authorization).first, parsed.scheme == "digest" {
                answer = Dictionary(parsed.parameters.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
            }
            guard !answer.isEmpty else { return challenge(realm, path: uri, answer: answer, verdict: .challenged, reason: nil, state: &state) }
            if let reason = problem(with: answer, method: method, uri: uri, realm: realm, state: state) {
                return challenge(realm, path: uri, answer: answer, verdict: .rejected, reason: reason, state: &state)
            }
            let nonce = answer["nonce"]!, nc = answer["nc"]!, cnonce = answer["cnonce"]!
            state.nonces[nonce]!.uses += 1
            state.nonces[nonce]!.counts.insert(Int(nc, radix: 16)!)
            var headers: [(String, String)] = []
            var issued: String?
            let algorithm = answer["algorithm"] ?? "MD5"
            if options.sendsNextNonce {
                let next = Self.issue(for: realm, state: &state)
                state.nonces[nonce] = nil
                issued = next
                var a1 = Self.hash(algorithm, "\(options.user):\(realm.name):\(options.password)")
                if algorithm.lowercased().hasSuffix("-sess") { a1 = Self.hash(algorithm, "\(a1):\(nonce):\(cnonce)") }
                let rspauth = Self.hash(algorithm, "\(a1):\(nonce):\(nc):\(cnonce):auth:\(Self.hash(algorithm, ":\(uri)"))")
                headers.append(("Authentication-Info", #"qop=auth, rspauth="\#(rspauth)", cnonce="\#(cnonce)", nc=\#(nc), nextnonce="\#(next)""#))
            } else if let limit = options.usesPerNonce, state.nonces[nonce]!.uses >= limit {
                state.nonces[nonce] = nil
            }
            state.log.append(LoggedRequest(path: uri, verdict: .accepted, answer: answer, issuedNonce: issued))
            return (200, headers, "\(realm.name) \(algorithm)")
        }
    }

    /// Why an answer is not right, or `nil` when it is.
    private func problem(with answer: [String: String], method: String, uri: String, realm: Realm, state: State) -> String? {
        guard answer["realm"] == realm.name else { return "realm \(answer["realm"] ?? "-") for \(realm.name)" }
        guard let nonce = answer["nonce"], let known = state.nonces[nonce], known.realm == realm.name else { return "unknown nonce" }
        let algorithm = answer["algorithm"] ?? "MD5"
        guard realm.algorithms.contains(where: { $0.lowercased() == algorithm.lowercased() }) else { return "algorithm \(algorithm) not offered" }
        guard answer["qop"] == "auth", let nc = answer["nc"], nc.count == 8, let count = Int(nc, radix: 16), let cnonce = answer["cnonce"], !cnonce.isEmpty
        else { return "qop, nc or cnonce" }
        guard count > 0, !known.counts.contains(count) else { return "nc \(count) replayed" }
        guard answer["uri"] == uri else { return "uri \(answer["uri"] ?? "-") for \(uri)" }
        let user = realm.userhash ? Self.hash(algorithm, "\(options.user):\(realm.name)") : options.user
        guard answer["username"] == user, (answer["userhash"] == "true") == realm.userhash else { return "username" }
        let expected = Self.expectedResponse(
            algorithm: algorithm, user: options.user, realm: realm.name, password: options.password, method: method, uri: uri,
            nonce: nonce, nc: nc, cnonce: cnonce)
        return answer["response"] == expected ? nil : "response"
    }

    private func challenge(
        _ realm: Realm, path: String, answer: [String: String], verdict: Verdict, reason: String?, state: inout State
    ) -> (status: Int, headers: [(String, String)], body: String) {
        let nonce = Self.issue(for: realm, state: &state)
        let headers = realm.algorithms.map { algorithm in
            var value = #"Digest realm="\#(realm.name)", qop="auth", algorithm=\#(algorithm), nonce="\#(nonce)", opaque="op-\#(realm.name)""#
            if realm.userhash { value += ", userhash=true" }
            return ("WWW-Authenticate", value)
        }
        state.log.append(LoggedRequest(path: path, verdict: verdict, answer: answer, reason: reason, issuedNonce: nonce))
        return (401, headers, "unauthorized")
    }

    private static func issue(for realm: Realm, state: inout State) -> String {
        state.issued += 1
        let nonce = "n\(state.issued)-" + Digests.sha256Hex(Data("\(realm.name)\(state.issued)\(UUID())".utf8)).prefix(16)
        state.nonces[nonce] = NonceState(realm: realm.name)
        return nonce
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let server: NIOLockedValueBox<DigestOriginServer?>
        private var head: HTTPRequestHead?

        init(server: NIOLockedValueBox<DigestOriginServer?>) {
            self.server = server
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let request):
                head = request
            case .body:
                break
            case .end:
                guard let request = head, let server = server.withLockedValue({ $0 }) else { return }
                head = nil
                let (status, fields, text) = server.answer(
                    method: request.method.rawValue, uri: request.uri, authorization: request.headers.first(name: "authorization"))
                let body = ByteBuffer(string: text)
                var headers = HTTPHeaders(fields)
                headers.add(name: "Content-Length", value: String(body.readableBytes))
                if !request.isKeepAlive { headers.add(name: "Connection", value: "close") }
                let head = HTTPResponseHead(version: request.version, status: HTTPResponseStatus(statusCode: status), headers: headers)
                context.write(wrapOutboundOut(.head(head)), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
                let done = context.eventLoop.makePromise(of: Void.self)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: done)
                if !request.isKeepAlive { done.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }
    }
}
