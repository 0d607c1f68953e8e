import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOPosix
import NIOHTTP1
import NIOHTTPCompression
import NIOSSL

extension AsyncHTTPClientTransport {
    /// Whether `error`, thrown before any response head, is the race of a server closing a kept-alive
    /// connection just as it is reused: the channel was already closed, the server closed it without
    /// answering, or reset it (async-http-client does not resend such a request itself: its connection
    /// pool only drops the dead connection).
    static func isStaleConnection(_ error: any Error) -> Bool {
        if let error = error as? ChannelError, error == .ioOnClosedChannel { return true }
        if let error = error as? HTTPClientError, error == .remoteConnectionClosed { return true }
        if let error = error as? IOError { return error.errnoCode == ECONNRESET || error.errnoCode == EPIPE }
        return false
    }

    /// Whether a request that met a stale connection may be sent again, as curl and OkHttp do: when
    /// repeating it is harmless (an idempotent method, RFC 9110 §9.2.2, or an `Idempotency-Key`), or
    /// when nothing of it was written (the channel was closed before a body sent in one piece).
    static func mayResend(_ request: TransportRequest, after error: any Error) -> Bool {
        if let streamed = request.streamedBody, !streamed.isReplayable { return false }
        let idempotent: Set<HTTPRequest.Method> = [.get, .head, .options, .put, .delete, .trace]
        if idempotent.contains(request.method) || request.headers[HTTPField.Name("Idempotency-Key")!] != nil { return true }
        // A closed channel refused the first write: a body handed over in one piece was not sent at all
        // (a streamed one might have been, in part).
        if let error = error as? ChannelError, error == .ioOnClosedChannel {
            return request.streamedBody == nil && (request.body?.count ?? 0) <= UploadParts.partSize
        }
        return false
    }

    /// Classifies an error from async-http-client or SwiftNIO as a ``NetworkError``.
    static func networkError(for error: any Error, url: String) -> NetworkError {
        if let error = error as? NetworkError { return error }
        if error is CancellationError { return .cancelled(url: url) }
        if let error = error as? HTTPClientError {
            return networkError(for: error, url: url)
        }
        if let error = error as? NIOHTTPDecompression.DecompressionError {
            if error == .limit {
                return NetworkError(
                    .bodyTooLarge, "the compressed body inflates beyond the decompression ratio limit",
                    url: url, underlying: error)
            }
            return NetworkError(.invalidResponse, "the compressed body is corrupt", url: url, underlying: error)
        }
        if error is NIOHTTPDecompression.ExtraDecompressionError {
            return NetworkError(.invalidResponse, "the compressed body is corrupt", url: url, underlying: error)
        }
        if let error = error as? HTTPParserError, error == .invalidEOFState {
            return NetworkError(.connectionLost, "the connection closed before the response was complete", url: url, underlying: error)
        }
        if error is HTTPParserError {
            return NetworkError(.invalidResponse, "the server sent malformed HTTP", url: url, underlying: error)
        }
        if let error = error as? NIOSSLError, case .uncleanShutdown = error {
            // The peer closed the TCP connection without a TLS close_notify before the body was complete:
            // a lost connection (and so freezable), not a TLS failure.
            return NetworkError(.connectionLost, "the connection closed before the response was complete", url: url, underlying: error)
        }
        if error is NIOSSLError || error is BoringSSLError {
            if String(describing: error).contains("WRONG_VERSION_NUMBER") {
                return NetworkError(
                    .tls, "the server answered plain HTTP to a TLS handshake; use isSecure: false or an http:// base URL",
                    url: url, underlying: error)
            }
            return NetworkError(.tls, tlsFailure(error), url: url, underlying: error)
        }
        if let error = error as? NIOConnectionError {
            return NetworkError(.cannotConnect, connectFailure(error), url: url, underlying: error)
        }
        if error is SocketAddressError {
            return NetworkError(.cannotConnect, "could not resolve the host: \(error)", url: url, underlying: error)
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED:
                return NetworkError(
                    .cannotConnect, "could not connect to \(endpoint(of: url)): \(refused)", url: url, underlying: error)
            case EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL:
                return NetworkError(
                    .cannotConnect, "could not connect to \(endpoint(of: url)): \(reason(error.errnoCode))", url: url, underlying: error)
            case ETIMEDOUT:
                return NetworkError(.timeout, "the connection timed out", url: url, underlying: error)
            default:
                // NIO's own description ("connection reset (error set): ... (errno: 104)") names its syscall, not the problem.
                return NetworkError(.connectionLost, "the connection failed: \(reason(error.errnoCode))", url: url, underlying: error)
            }
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout:
                return NetworkError(.timeout, "connecting timed out", url: url, underlying: error)
            case .eof, .ioOnClosedChannel, .alreadyClosed, .outputClosed, .inputClosed:
                return NetworkError(.connectionLost, "the connection closed", url: url, underlying: error)
            default:
                break
            }
        }
        return NetworkError(.transport, String(describing: error), url: url, underlying: error)
    }

    private static func networkError(for error: HTTPClientError, url: String) -> NetworkError {
        switch error {
        case .connectTimeout, .tlsHandshakeTimeout, .getConnectionFromPoolTimeout,
            .socksHandshakeTimeout, .httpProxyHandshakeTimeout:
            return NetworkError(.timeout, "connecting timed out", url: url, underlying: error)
        case .readTimeout:
            return NetworkError(.timeout, "the server sent nothing within the read timeout", url: url, underlying: error)
        case .writeTimeout:
            return NetworkError(.timeout, "the request could not be written within the timeout", url: url, underlying: error)
        case .deadlineExceeded:
            return NetworkError(.timeout, "the request did not finish within its total timeout", url: url, underlying: error)
        case .remoteConnectionClosed, .uncleanShutdown:
            return NetworkError(.connectionLost, "the server closed the connection before the response was complete", url: url, underlying: error)
        case .cancelled, .requestStreamCancelled:
            return .cancelled(url: url)
        case .invalidURL, .emptyHost, .emptyScheme:
            return NetworkError(.invalidURL, "the URL is not valid", url: url, underlying: error)
        case .proxyAuthenticationRequired:
            return NetworkError(
                .cannotConnect, "the proxy refused the connection: it needs credentials, or refused those given (407)", url: url, underlying: error)
        case .invalidProxyResponse:
            return NetworkError(.cannotConnect, "the proxy did not open a tunnel to the host", url: url, underlying: error)
        case .bodyLengthMismatch:
            // Raised for the REQUEST body: the caller's body did not have the length it declared.
            return NetworkError(
                .encodingFailed, "the request body's length does not match the length it declared", url: url, underlying: error)
        default:
            // These codes carry values, so they are told apart by their fixed short descriptions.
            switch error.shortDescription {
            case "Unsupported scheme":
                return NetworkError(.invalidURL, "only http and https URLs are supported", url: url, underlying: error)
            case "Invalid header field names", "Invalid header field values":
                return NetworkError(.invalidHeader, "a header name or value is not valid", url: url, underlying: error)
            default:
                break
            }
            return NetworkError(.transport, error.description, url: url, underlying: error)
        }
    }

    /// What a refused connection means, for messages.
    private static let refused = "connection refused (nothing listens on that port)"

    /// A one-line reason for a failed connection: "refused" when the host answered that nothing listens.
    static func connectFailure(_ error: NIOConnectionError) -> String {
        let errors = error.connectionErrors.map(\.error)
        if errors.contains(where: { ($0 as? IOError)?.errnoCode == ECONNREFUSED }) {
            return "could not connect to \(error.host):\(error.port): \(refused)"
        }
        if let dns = error.dnsAError ?? error.dnsAAAAError {
            return "could not resolve \(error.host): \(dns)"
        }
        if let first = errors.first as? IOError {
            return "could not connect to \(error.host):\(error.port): \(reason(first.errnoCode))"
        }
        return "could not connect to \(error.host):\(error.port)"
    }

    /// `strerror` in lower case, as the end of a message: "connection refused", "network is unreachable".
    static func reason(_ errnoCode: Int32) -> String {
        String(cString: strerror(errnoCode)).lowercased()
    }

    /// `host:port` of a request URL (the scheme's default port when none is given), for messages.
    static func endpoint(of url: String) -> String {
        guard let components = URLComponents(string: url), let host = components.host, !host.isEmpty else { return "the server" }
        let port = components.port ?? (components.scheme?.lowercased() == "https" ? 443 : 80)
        return (host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host) + ":\(port)"
    }

    /// A TLS failure in words: BoringSSL's reason (`CERTIFICATE_VERIFY_FAILED`) and what it means, not the
    /// library's description (which carries an error number and a source path). The whole error stays in
    /// `underlying`.
    static func tlsFailure(_ error: any Error) -> String {
        let text = String(describing: error)
        let reason = text.range(of: "OPENSSL_internal:").map { text[$0.upperBound...].prefix { $0.isUppercase || $0.isNumber || $0 == "_" } }
            .map(String.init)
        switch reason {
        case "CERTIFICATE_VERIFY_FAILED"?:
            return "the server's certificate is not trusted (CERTIFICATE_VERIFY_FAILED): its chain does not lead to one of the "
                + "engine's roots (TrustPolicy.roots), or it has expired"
        case let reason? where reason.contains("CERTIFICATE_REQUIRED") || reason.contains("HANDSHAKE_FAILURE"):
            return "the server refused the TLS handshake (\(reason)): it may require a client certificate (TrustPolicy.clientIdentity)"
        case let reason? where !reason.isEmpty:
            return "TLS failed (\(reason))"
        default:
            if text.contains("Couldn't find") || text.lowercased().contains("hostname") {
                return "the server's certificate does not name the host: \(text)"
            }
            return "TLS failed: \(text)"
        }
    }
}
