public import Foundation

// The tutorial's download constructor: a GET whose body goes to a file.
extension NetworkEngine {
    /// Downloads `path` to `destination` (see ``NetworkOperation/download(to:resumable:)-([URL],_)``).
    /// - Parameters:
    ///   - path: The path below the API path.
    ///   - params: Query parameters.
    ///   - destination: The file to write; its folder must exist; an existing file is replaced.
    ///   - resumable: Whether an interrupted download can be resumed by the next call; on by default.
    /// - Returns: The response, with ``NetworkResponse/fileURLs`` `[destination]`.
    /// - Throws: ``NetworkError``; ``NetworkError/Code/fileUnavailable`` when the file cannot be written.
    public func download(
        path: String, params: [String: ParameterValue] = [:], to destination: URL, resumable: Bool = true
    ) async throws(NetworkError) -> NetworkResponse {
        try await send(operation(path: path, params: params).download(to: destination, resumable: resumable))
    }

    /// Downloads an absolute URL to `destination`; see ``download(path:params:to:resumable:)``.
    /// - Parameters:
    ///   - url: An absolute http or https URL.
    ///   - destination: The file to write.
    ///   - resumable: Whether an interrupted download can be resumed by the next call; on by default.
    /// - Returns: The response, with ``NetworkResponse/fileURLs`` `[destination]`.
    /// - Throws: ``NetworkError``.
    public func download(url: String, to destination: URL, resumable: Bool = true) async throws(NetworkError) -> NetworkResponse {
        try await send(operation(url: url).download(to: destination, resumable: resumable))
    }
}
