import Foundation
import NIOHTTP1

/// Maps a fully received request to the ``RouteAction`` that answers it.
///
/// Routing is a pure function of the request, so it never touches the channel.
enum Router {
    /// Chooses the response for `request`. Unknown paths yield `404`.
    static func route(_ request: IncomingRequest) -> RouteAction {
        guard request.path.hasPrefix("/") else { return .reply(.notFound) }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false)
            .dropFirst().map(String.init)
        guard let first = parts.first else { return .reply(.notFound) }
        let argument = parts.count >= 2 ? parts[1] : nil

        switch (first, parts.count) {
        case ("get", 1), ("anything", _):
            return .reply(.bytes(Inspector.describe(request), contentType: "application/json"))
        case ("headers", 1):
            let body = Inspector.encode(["headers": Inspector.headerObject(request)])
            return .reply(.bytes(body, contentType: "application/json"))
        case ("delay", 2):
            return delay(argument)
        case ("status", 2):
            return .reply(status(argument))
        case ("bytes", 2):
            return bytes(argument, request.queryParameters)
        case ("redirect", 2):
            return .reply(redirect(argument))
        case ("redirect-to", 1):
            return .reply(redirectTo(request.queryParameters))
        case ("redirect-loop", 1):
            return .reply(Reply(status: .found, headers: [("Location", "/redirect-loop")]))
        case ("stall", 1):
            return .stall
        case ("stall-body", 1):
            return .partial(partialReply(declared: 1000, sent: 100), thenClose: false)
        case ("drop-mid-body", 1):
            return .partial(partialReply(declared: 100_000, sent: 1000), thenClose: true)
        case ("events", 1):
            return events(request)
        case ("gzip", 1):
            return .reply(
                .bytes(Fixtures.gzipJSON, contentType: "application/json", extraHeaders: [("Content-Encoding", "gzip")])
            )
        case ("deflate", 1):
            return .reply(
                .bytes(
                    Fixtures.deflateJSON, contentType: "application/json",
                    extraHeaders: [("Content-Encoding", "deflate")]
                )
            )
        case ("gzip-bomb", 1):
            return .reply(
                .bytes(
                    Fixtures.gzipBomb, contentType: "application/octet-stream",
                    extraHeaders: [("Content-Encoding", "gzip")]
                )
            )
        case ("json", 1):
            return .reply(.bytes(Array(Fixtures.json.utf8), contentType: "application/json; charset=utf-8"))
        case ("invalid-json", 1):
            return .reply(.bytes(Array(Fixtures.invalidJSON.utf8), contentType: "application/json"))
        case ("xml", 1):
            return .reply(.bytes(Array(Fixtures.xml.utf8), contentType: "application/xml"))
        case ("latin1", 1):
            return .reply(.bytes(Fixtures.latin1, contentType: "text/plain; charset=iso-8859-1"))
        case ("basic-auth", 3):
            return .reply(basicAuth(user: parts[1], password: parts[2], request))
        case ("bearer", 2):
            // 200 for `Authorization: Bearer <token>` with the token in the path, else 401.
            if request.header("Authorization") == "Bearer \(parts[1])" {
                return .reply(.bytes(Inspector.encode(["authenticated": true]), contentType: "application/json"))
            }
            return .reply(Reply(status: .unauthorized, headers: [("WWW-Authenticate", #"Bearer realm="test""#)]))
        case ("rates", 1):
            return .reply(rates(request.queryParameters))
        case ("respond", _):
            return .reply(respond(request))
        case ("cache", 2):
            return .reply(cache(argument, request))
        case ("echo", 1):
            return .reply(echo(request))
        default:
            return .reply(.notFound)
        }
    }

    // MARK: Individual routes

    private static func delay(_ argument: String?) -> RouteAction {
        guard let milliseconds = argument.flatMap({ Int64($0) }), (0...3_600_000).contains(milliseconds) else {
            return .reply(.badRequest("delay must be 0...3600000 milliseconds"))
        }
        let body = Inspector.encode(["delay": milliseconds])
        return .delayed(milliseconds: milliseconds, .bytes(body, contentType: "application/json"))
    }

    private static func status(_ argument: String?) -> Reply {
        guard let requested = argument.flatMap({ Int($0) }), (200...599).contains(requested) else {
            return .text(.badRequest, "status 400")
        }
        let reply = Reply.text(HTTPResponseStatus(statusCode: requested), "status \(requested)")
        return reply.allowsBody ? reply : Reply(status: reply.status)
    }

    private static func bytes(_ argument: String?, _ query: [String: String]) -> RouteAction {
        guard let total = argument.flatMap({ Int($0) }), total >= 0 else {
            return .reply(.badRequest("byte count must be a non-negative integer"))
        }
        var chunkSize = query["chunkSize"].flatMap { Int($0) } ?? ByteStreamPlan.defaultChunkSize
        chunkSize = min(max(chunkSize, 1), ByteStreamPlan.maximumChunkSize)
        let delay = query["delayMs"].flatMap { Int64($0) } ?? 0
        return .stream(
            ByteStreamPlan(
                total: total,
                chunkSize: chunkSize,
                delayMilliseconds: min(max(delay, 0), 60_000),
                chunked: ["1", "true", "yes"].contains(query["chunked"] ?? "")
            )
        )
    }

    private static func redirect(_ argument: String?) -> Reply {
        guard let count = argument.flatMap({ Int($0) }), count >= 0 else {
            return .badRequest("redirect count must be a non-negative integer")
        }
        let location = count == 0 ? "/get" : "/redirect/\(count - 1)"
        return Reply(status: .found, headers: [("Location", location)])
    }

    private static func redirectTo(_ query: [String: String]) -> Reply {
        guard let target = query["url"], !target.isEmpty,
            !target.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        else {
            return .badRequest("url parameter missing or invalid")
        }
        var code = 302
        if let text = query["status"] {
            guard let parsed = Int(text), (300...399).contains(parsed) else {
                return .badRequest("status must be 300...399")
            }
            code = parsed
        }
        return Reply(status: HTTPResponseStatus(statusCode: code), headers: [("Location", target)])
    }

    /// `/events?total=T&per=P`: a server-sent event stream of `T` events (6 by default, at most 10,000) that
    /// sends `P` of them (3 by default) per connection, after the client's `Last-Event-ID`, then drops the
    /// connection; `204 No Content` once every event was sent. Asks for reconnections after 100 ms.
    private static func events(_ request: IncomingRequest) -> RouteAction {
        let query = request.queryParameters
        let total = min(10_000, max(0, query["total"].flatMap { Int($0) } ?? 6))
        let perConnection = min(10_000, max(1, query["per"].flatMap { Int($0) } ?? 3))
        let after = max(0, request.header("Last-Event-ID").flatMap { Int($0) } ?? 0)
        guard after < total else { return .reply(Reply(status: .noContent)) }
        let events = (after + 1...min(total, after + perConnection)).map { "id: \($0)\ndata: event \($0) of \(total)\n\n" }
        let body = Array(("retry: 100\n\n" + events.joined()).utf8)
        // Declared longer than what is sent: the connection drops in the middle of the stream.
        return .partial(
            Reply(status: .ok, headers: [("Content-Type", "text/event-stream"), ("Content-Length", String(body.count + 1_000_000))], body: body),
            thenClose: true)
    }

    private static func partialReply(declared: Int, sent: Int) -> Reply {
        Reply(
            status: .ok,
            headers: [("Content-Type", "application/octet-stream"), ("Content-Length", String(declared))],
            body: BytePattern.bytes(offset: 0, count: sent)
        )
    }

    private static func basicAuth(user rawUser: String, password rawPassword: String, _ request: IncomingRequest)
        -> Reply
    {
        let user = rawUser.removingPercentEncoding ?? rawUser
        let password = rawPassword.removingPercentEncoding ?? rawPassword
        var authorized = false
        if let header = request.header("Authorization") {
            let fields = header.split(separator: " ", maxSplits: 1)
            if fields.count == 2, fields[0].lowercased() == "basic",
                let data = Data(base64Encoded: String(fields[1]).trimmingCharacters(in: .whitespaces)),
                let credentials = String(data: data, encoding: .utf8)
            {
                authorized = credentials == "\(user):\(password)"
            }
        }
        guard authorized else {
            return .bytes(
                Array(#"{"authenticated":false}"#.utf8), contentType: "application/json", status: .unauthorized,
                extraHeaders: [("WWW-Authenticate", #"Basic realm="test""#)]
            )
        }
        let body = Inspector.encode(["authenticated": true, "user": user])
        return .bytes(body, contentType: "application/json")
    }

    private static func rates(_ query: [String: String]) -> Reply {
        let base = query["base"] ?? "EUR"
        let object: [String: Any] = ["base": base, "rates": ["USD": 1.08, "GBP": 0.85, "JPY": 161.2]]
        return .bytes(Inspector.encode(object), contentType: "application/json")
    }

    /// `/respond/...`: the status from `X-Respond-Status` (default 200) and the header lines (base64 of
    /// `Name: value` lines) from `X-Respond-Headers`, so a test controls every response header,
    /// `Date` included, without changing the URL. A request whose `If-None-Match` names the response's
    /// `ETag`, or whose `If-Modified-Since` equals its `Last-Modified`, gets a 304 with those headers.
    private static func respond(_ request: IncomingRequest) -> Reply {
        let status = request.header("X-Respond-Status").flatMap { Int($0) }.flatMap { (200...599).contains($0) ? $0 : nil } ?? 200
        var headers: [(name: String, value: String)] = []
        if let encoded = request.header("X-Respond-Headers"), let data = Data(base64Encoded: encoded) {
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
        }
        func value(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
        let etagMatches = value("ETag").map { etag in
            request.header("If-None-Match")?.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == etag } ?? false
        } ?? false
        let dateMatches = value("Last-Modified").map { request.header("If-Modified-Since") == $0 } ?? false
        if status == 200 && (etagMatches || (request.header("If-None-Match") == nil && dateMatches)) {
            return Reply(status: .notModified, headers: headers)
        }
        return Reply(
            status: HTTPResponseStatus(statusCode: status), headers: headers + [("Content-Type", "text/plain")],
            body: Array("body \(request.ticket.pathCount)".utf8))
    }

    private static func cache(_ argument: String?, _ request: IncomingRequest) -> Reply {
        guard let seconds = argument.flatMap({ Int($0) }), seconds >= 0 else {
            return .badRequest("seconds must be a non-negative integer")
        }
        let headers: [(name: String, value: String)] = [
            ("Cache-Control", "max-age=\(seconds)"),
            ("ETag", #""v1""#),
            ("Last-Modified", Fixtures.lastModified),
        ]
        if let candidates = request.header("If-None-Match") {
            let tags = candidates.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if tags.contains(where: { $0 == #""v1""# || $0 == #"W/"v1""# || $0 == "*" }) {
                return Reply(status: .notModified, headers: headers)
            }
        }
        let body = Inspector.encode(["cached": true, "n": request.ticket.pathCount])
        return .bytes(body, contentType: "application/json", extraHeaders: headers)
    }

    private static func echo(_ request: IncomingRequest) -> Reply {
        let methodHeader = ("X-Echo-Method", request.method)
        if request.bodyOverflowed {
            let body = Inspector.encode(["received": request.bodyByteCount])
            return .bytes(body, contentType: "application/json", extraHeaders: [methodHeader])
        }
        let contentType = request.header("Content-Type") ?? "application/octet-stream"
        return .bytes(request.body, contentType: contentType, extraHeaders: [methodHeader])
    }
}
