// Courier speaks swift-http-types' vocabulary (`HTTPRequest.Method`, `HTTPFields`, `HTTPResponse.Status`);
// re-exporting it lets `import Courier` alone write `method: .post` or `response.headers[.contentType]`.
@_exported public import HTTPTypes
