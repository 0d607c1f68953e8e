import ArgumentParser
import Courier
import Foundation
import HTTPTypes

/// Authentication, retries and cookies for `get`, `post`, `download` and `upload`.
struct PipelineOptions: ParsableArguments {
    enum AuthType: String, ExpressibleByArgument, CaseIterable {
        case basic, digest
    }

    @Option(help: ArgumentHelp("Credentials for HTTP authentication, user:password (Basic unless --auth-type digest). "
        + "Sent only to the URL's own origin.", valueName: "user:password"))
    var auth: String?

    @Option(help: ArgumentHelp("How --auth is sent: basic (with every request) or digest (answering the server's challenge).", valueName: "type"))
    var authType: AuthType = .basic

    @Option(help: ArgumentHelp("A bearer token, sent as 'Authorization: Bearer <token>' to the URL's own origin.", valueName: "token"))
    var bearer: String?

    @Option(help: ArgumentHelp("Retry up to N times after a connection failure, a timeout or 408, 429, 500, 502, 503, 504 "
        + "(GET, HEAD, PUT, DELETE, or with an Idempotency-Key); exponential backoff, Retry-After honoured. 0 to 100.", valueName: "n"),
        transform: { try OptionValue.integer($0, in: PipelineOptions.retryRange) })
    var retry: Int?

    /// The retries `--retry` accepts.
    static let retryRange = 0...100

    /// Whether a request may be sent again after an answer (`--retry`, or Digest answering a challenge):
    /// its body cannot then go to standard output as it arrives, since every status is printed and an
    /// answer that is retried must not be.
    var maySendAgain: Bool { retry != nil || authType == .digest }

    @Option(help: ArgumentHelp("Send cookies from this file and save the ones the server sets (SQLite, created owner-only; "
        + "session cookies are kept too, as a browser session would).", valueName: "file"))
    var cookieJar: String?

    /// An engine's configuration for requests to `url`: these options' interceptors and cookie jar, and
    /// the connection options' trust (its warnings on stderr), HTTP versions and proxy. Each command adds
    /// what is its own.
    func configuration(for url: String, connection: ConnectionOptions) throws -> NetworkEngine.Configuration {
        let (interceptors, jar) = try interceptors(for: url)
        let trust = try connection.trust(for: url) { StandardStream.standardError.write($0 + "\n") }
        let proxy = try connection.proxySettings()
        return NetworkEngine.Configuration {
            $0.trust = trust
            $0.httpVersions = connection.httpVersions
            $0.proxy = proxy
            $0.interceptors = interceptors
            $0.cookieJar = jar
        }
    }

    /// The interceptors the options ask for, and the jar (to wait for before exiting); a malformed
    /// option is a usage error.
    func interceptors(for url: String) throws(CLIFailure) -> (interceptors: [any RequestInterceptor], jar: CookieJar?) {
        var interceptors: [any RequestInterceptor] = []
        if let retry {
            interceptors.append(RetryPolicy(maximumAttempts: retry + 1))
        }
        if let auth {
            guard let colon = auth.firstIndex(of: ":") else { throw CLIFailure.usage("--auth needs user:password") }
            let credentials = PasswordCredentials(user: String(auth[..<colon]), password: String(auth[auth.index(after: colon)...]))
            switch authType {
            case .basic: interceptors.append(BasicAuthenticator(credentials: credentials))
            case .digest: interceptors.append(DigestAuthenticator(credentials: credentials))
            }
        } else if let credentials = URL(string: url).flatMap(PasswordCredentials.init(userInfoOf:)) {
            // curl's rule: credentials in the URL are sent with Basic (with --auth-type digest, as Digest).
            switch authType {
            case .basic: interceptors.append(BasicAuthenticator(credentials: credentials))
            case .digest: interceptors.append(DigestAuthenticator(credentials: credentials))
            }
        }
        if let bearer {
            guard !bearer.isEmpty, !bearer.contains(where: { $0.isNewline || $0 == " " }) else {
                throw CLIFailure.usage("--bearer needs a token without spaces or line breaks")
            }
            interceptors.append(BearerHeader(token: bearer))
        }
        let jar = cookieJar.map { CookieJar(persistingAt: URL(fileURLWithPath: $0), keepsSessionCookies: true) }
        return (interceptors, jar)
    }
}

extension NetworkEngine.Configuration {
    /// This configuration with `change` applied.
    func with(_ change: (inout Self) -> Void) -> Self {
        var configuration = self
        change(&configuration)
        return configuration
    }
}

extension PipelineOptions {
    /// The URL without its `user:password@` part: the credentials go through the authenticator, and a
    /// URL kept anywhere (the outbox, the cache, logs) never holds a password.
    static func withoutUserInfo(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.user != nil || components.password != nil else { return url }
        components.user = nil
        components.password = nil
        return components.string ?? url
    }
}

/// `--bearer`: the token as given, with no refresh (a 401 is printed as the answer it is).
struct BearerHeader: RequestInterceptor {
    let token: String

    func adapt(_ request: HTTPRequest, context: InterceptorContext) async throws -> HTTPRequest {
        guard !context.isCrossOrigin else { return request }
        var request = request
        request.headerFields[.authorization] = "Bearer " + token
        return request
    }
}
