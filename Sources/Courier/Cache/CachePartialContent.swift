import Foundation
import HTTPTypes

/// Partial content in the cache (RFC 9111 §3.3, §3.4; RFC 9110 §14): storing `206` responses,
/// combining stored ranges into a complete response, answering `Range` requests from what is stored,
/// and asking the origin only for what is missing.
///
/// A stored partial response is an entry with status 206 whose one `Content-Range` names a complete
/// length; its body holds exactly those bytes. Only single-part, unencoded 206s are stored
/// (`multipart/byteranges` and a `Content-Encoding` other than identity are not: ranges of an
/// encoded representation do not slice the decoded bytes Courier keeps).
enum CachePartialContent {
    /// A contiguous range of a representation: `first...last` of `completeLength` bytes.
    struct Span: Sendable, Equatable {
        var first: Int
        var last: Int
        var completeLength: Int

        /// The number of bytes in the span.
        var count: Int { last - first + 1 }
        /// Whether the span is the whole representation.
        var isComplete: Bool { first == 0 && last == completeLength - 1 }

        /// `bytes first-last/complete` (RFC 9110 §14.4).
        var contentRange: String { "bytes \(first)-\(last)/\(completeLength)" }

        /// Whether the span holds every byte of `range`.
        func covers(_ range: ClosedRange<Int>) -> Bool { first <= range.lowerBound && range.upperBound <= last }
    }

    /// One byte range of a `Range` request (RFC 9110 §14.1.2).
    enum RequestedRange: Sendable, Equatable {
        /// `first-` or `first-last`.
        case from(Int, through: Int?)
        /// `-length`: the last `length` bytes.
        case suffix(Int)

        /// The bytes it asks of a representation of `completeLength` bytes, or `nil` when unsatisfiable
        /// (RFC 9110 §14.1.1: a first position past the end, or a zero-length suffix).
        func resolved(completeLength: Int) -> ClosedRange<Int>? {
            guard completeLength > 0 else { return nil }
            switch self {
            case .from(let first, let last):
                guard first < completeLength else { return nil }
                return first...min(last ?? completeLength - 1, completeLength - 1)
            case .suffix(let length):
                guard length > 0 else { return nil }
                return max(0, completeLength - length)...(completeLength - 1)
            }
        }
    }

    /// The request's single byte range, or `nil` without a `Range`, with several ranges, another unit
    /// or a syntax error (the cache then treats the request as not asking for a range it can serve).
    static func requestedRange(_ headers: HTTPFields) -> RequestedRange? {
        let lines = headers[values: .range]
        guard lines.count == 1, let value = lines.first else { return nil }
        let trimmed = CacheHeaderSyntax.trimmingOWS(Substring(value))
        guard CacheHeaderSyntax.asciiLowercased(trimmed.prefix(6)) == "bytes=" else { return nil }
        let spec = CacheHeaderSyntax.trimmingOWS(trimmed.dropFirst(6))
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let firstText = spec[..<dash], lastText = spec[spec.index(after: dash)...]
        if firstText.isEmpty {
            return digits(lastText).map(RequestedRange.suffix)
        }
        guard let first = digits(firstText) else { return nil }
        if lastText.isEmpty { return .from(first, through: nil) }
        guard let last = digits(lastText), last >= first else { return nil }
        return .from(first, through: last)
    }

    /// Whether the request carries a `Range` field at all.
    static func hasRange(_ headers: HTTPFields) -> Bool { headers[.range] != nil }

    /// The span of a `Content-Range: bytes first-last/complete` value (RFC 9110 §14.4); `nil` for an
    /// unknown complete length (`/*`), an unsatisfied range (`*/complete`) or invalid syntax.
    static func span(contentRange value: String) -> Span? {
        let trimmed = CacheHeaderSyntax.trimmingOWS(Substring(value))
        guard CacheHeaderSyntax.asciiLowercased(trimmed.prefix(6)) == "bytes " else { return nil }
        let rest = trimmed.dropFirst(6)
        guard let slash = rest.firstIndex(of: "/"), let dash = rest[..<slash].firstIndex(of: "-"),
            let first = digits(rest[..<dash]), let last = digits(rest[rest.index(after: dash)..<slash]),
            let complete = digits(rest[rest.index(after: slash)...]),
            first <= last, last < complete
        else { return nil }
        return Span(first: first, last: last, completeLength: complete)
    }

    /// The span of a 206 the cache may store: one valid `Content-Range` with a complete length, no
    /// content coding, and a body of exactly that many bytes (`bodyCount`, when known).
    static func storableSpan(status: HTTPResponse.Status, headers: HTTPFields, bodyCount: Int? = nil) -> Span? {
        let ranges = headers[values: .contentRange]
        guard status.code == 206, ranges.count == 1, let span = span(contentRange: ranges[0]),
            headers[values: .contentEncoding].allSatisfy({ CacheHeaderSyntax.asciiLowercased($0) == "identity" })
        else { return nil }
        if let bodyCount, bodyCount != span.count { return nil }
        return span
    }

    /// Whether two responses carry the same strong validator (RFC 9111 §3.4): the same strong entity
    /// tag, or, without entity tags, the same Last-Modified that is strong for both (their Date at
    /// least a second later, RFC 9110 §8.8.2.2).
    static func sameStrongValidator(_ a: HTTPFields, _ b: HTTPFields) -> Bool {
        let tagA = a[values: .eTag].first.flatMap(CacheRevalidation.EntityTag.init)
        let tagB = b[values: .eTag].first.flatMap(CacheRevalidation.EntityTag.init)
        if let tagA, let tagB { return tagA.strongMatches(tagB) }
        guard tagA == nil, tagB == nil else { return false }
        guard let modifiedA = a[values: .lastModified].first.flatMap({ HTTPDate.parse($0) }),
            let modifiedB = b[values: .lastModified].first.flatMap({ HTTPDate.parse($0) }), modifiedA == modifiedB
        else { return false }
        return [a, b].allSatisfy { fields in
            fields[values: .date].first.flatMap({ HTTPDate.parse($0) }).map { $0.timeIntervalSince(modifiedA) >= 1 } ?? false
        }
    }

    /// `stored` and `newer` (partial or complete, same URL and variant) combined into one entry when
    /// they share a strong validator and their spans touch or overlap (RFC 9111 §3.4). The newer
    /// response's header fields win (as §3.4 asks); a combination that covers the whole
    /// representation becomes a complete 200 response. `nil` when they cannot be combined.
    static func combine(_ stored: CachedResponseEntry, with newer: CachedResponseEntry) -> CachedResponseEntry? {
        guard let a = stored.span ?? completeSpan(stored), let b = newer.span ?? completeSpan(newer),
            a.completeLength == b.completeLength, sameStrongValidator(stored.headers, newer.headers),
            a.first <= b.last + 1, b.first <= a.last + 1
        else { return nil }
        let first = min(a.first, b.first), last = max(a.last, b.last)
        var body = Data(count: last - first + 1)
        body.replaceSubrange((a.first - first)...(a.last - first), with: stored.body)
        body.replaceSubrange((b.first - first)...(b.last - first), with: newer.body)
        var combined = newer
        combined.body = body
        let span = Span(first: first, last: last, completeLength: a.completeLength)
        if span.isComplete {
            combined.status = .ok
            combined.headers[fields: .contentRange] = []
        } else {
            combined.status = .partialContent
            combined.headers[.contentRange] = span.contentRange
        }
        combined.headers[.contentLength] = String(span.count)
        return combined
    }

    /// The span of a complete stored response (all of its body).
    private static func completeSpan(_ entry: CachedResponseEntry) -> Span? {
        // A body stored decoded (Content-Encoding) is not the representation ranges count in.
        guard entry.status.code == 200, !entry.body.isEmpty,
            entry.headers[values: .contentEncoding].allSatisfy({ CacheHeaderSyntax.asciiLowercased($0) == "identity" })
        else { return nil }
        return Span(first: 0, last: entry.body.count - 1, completeLength: entry.body.count)
    }

    /// The fields that ask the origin for only what a stored partial response lacks (RFC 9111 §3.4,
    /// RFC 9110 §13.1.5): `Range` for the missing head or tail and `If-Range` with its strong validator,
    /// so a changed representation comes back whole. `nil` when the stored part is in the middle
    /// (two ranges would be needed) or has no strong validator.
    static func completionRequest(for partial: CachedResponseEntry) -> HTTPFields? {
        guard let span = partial.span, !span.isComplete else { return nil }
        let validator: String
        if let tag = partial.entityTag.flatMap(CacheRevalidation.EntityTag.init), !tag.isWeak {
            validator = String(tag.opaque)
        } else if partial.entityTag == nil, let modified = partial.lastModified,
            sameStrongValidator(partial.headers, partial.headers)
        {
            validator = modified
        } else {
            return nil
        }
        let range: String
        if span.first == 0 {
            range = "bytes=\(span.last + 1)-"
        } else if span.last == span.completeLength - 1 {
            range = "bytes=0-\(span.first - 1)"
        } else {
            return nil
        }
        return [.range: range, .ifRange: validator]
    }

    /// The bytes a completion request (``completionRequest(for:)``) asks for, to check the answer.
    struct Completion: Sendable, Equatable {
        var range: ClosedRange<Int>
        var completeLength: Int
        /// The `If-Range` value sent.
        var validator: String

        /// The completion asked for `partial`, if any.
        init?(for partial: CachedResponseEntry) {
            guard let fields = CachePartialContent.completionRequest(for: partial), let span = partial.span,
                let validator = fields[.ifRange]
            else { return nil }
            range = span.first == 0 ? (span.last + 1)...(span.completeLength - 1) : 0...(span.first - 1)
            completeLength = span.completeLength
            self.validator = validator
        }

        /// Whether a response completes the stored part: a 206 of exactly the missing bytes of the same
        /// length, with the validator sent in `If-Range`. Anything else (a 416, other bytes, another
        /// validator from a server that ignores If-Range) does not: the request is then sent again
        /// without `Range` and `If-Range`. A 200 is the whole representation and is used as it is.
        func isCompleted(by status: Int, headers: HTTPFields) -> Bool {
            guard status == 206, headers[values: .contentRange].count == 1,
                let span = headers[.contentRange].flatMap(CachePartialContent.span(contentRange:)),
                span.first == range.lowerBound, span.last == range.upperBound, span.completeLength == completeLength
            else { return false }
            if validator.hasPrefix("\"") {
                guard let sent = CacheRevalidation.EntityTag(validator), let got = headers[.eTag].flatMap(CacheRevalidation.EntityTag.init)
                else { return false }
                return sent.strongMatches(got)
            }
            return headers[.lastModified] == validator
        }

        /// Whether the answer is to be dropped and the request sent again, whole: not the 206 asked for,
        /// and not a 200 (which is the whole representation anyway).
        func mustResendWhole(status: Int, headers: HTTPFields) -> Bool {
            status != 200 && !isCompleted(by: status, headers: headers) && (status == 206 || status == 416)
        }
    }

    /// A stored response (complete or partial) answering `range`: a 206 with its `Content-Range`,
    /// `Content-Length` and the bytes asked for; `nil` when the stored bytes do not cover it or it is
    /// unsatisfiable.
    static func slice(_ entry: CachedResponseEntry, range requested: RequestedRange) -> (headers: HTTPFields, body: Data)? {
        guard let span = entry.span ?? completeSpan(entry), let range = requested.resolved(completeLength: span.completeLength),
            span.covers(range), Int64(entry.body.count) == Int64(span.count)
        else { return nil }
        var headers = entry.headers
        headers[.contentRange] = Span(first: range.lowerBound, last: range.upperBound, completeLength: span.completeLength).contentRange
        headers[.contentLength] = String(range.count)
        let start = entry.body.startIndex + (range.lowerBound - span.first)
        return (headers, entry.body.subdata(in: start..<(start + range.count)))
    }

    /// Whether `entry` can answer a request with these header fields: a complete response answers any
    /// request; a partial one only a `Range` request whose bytes it holds.
    static func canAnswer(_ entry: CachedResponseEntry, requestHeaders: HTTPFields) -> Bool {
        guard entry.status.code == 206 else { return true }
        guard let span = entry.span, let requested = effectiveRange(requestHeaders, for: entry),
            let range = requested.resolved(completeLength: span.completeLength)
        else { return false }
        return span.covers(range)
    }

    /// The range a request asks of `entry`: its `Range`, unless an `If-Range` does not hold for the
    /// entry (RFC 9110 §13.1.5: then the whole representation is the answer).
    static func effectiveRange(_ requestHeaders: HTTPFields, for entry: CachedResponseEntry) -> RequestedRange? {
        guard let range = requestedRange(requestHeaders) else { return nil }
        return ifRangeHolds(requestHeaders, for: entry) ? range : nil
    }

    /// Whether the request's `If-Range` (if any) holds for `entry` (RFC 9110 §13.1.5): an entity tag
    /// matching the entry's by strong comparison, or a date exactly equal to the entry's Last-Modified
    /// when that is strong (its Date at least a second later).
    static func ifRangeHolds(_ requestHeaders: HTTPFields, for entry: CachedResponseEntry) -> Bool {
        guard let condition = requestHeaders[.ifRange].map({ String(CacheHeaderSyntax.trimmingOWS(Substring($0))) }) else { return true }
        if condition.hasPrefix("\"") || condition.hasPrefix("W/") {
            guard let wanted = CacheRevalidation.EntityTag(condition), let stored = entry.entityTag.flatMap(CacheRevalidation.EntityTag.init)
            else { return false }
            return wanted.strongMatches(stored)
        }
        guard let date = HTTPDate.parse(condition), let modified = entry.lastModified.flatMap({ HTTPDate.parse($0) }),
            date == modified, let served = entry.headers[values: .date].first.flatMap({ HTTPDate.parse($0) })
        else { return false }
        return served.timeIntervalSince(modified) >= 1
    }

    private static func digits(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 18, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(text)
    }
}

extension CachedResponseEntry {
    /// The bytes a stored 206 holds (RFC 9111 §3.3), from its `Content-Range`; `nil` for a complete response.
    /// `nil` too for a 206 whose body is not exactly the bytes its Content-Range names (such an entry
    /// answers nothing: see `CachePartialContent.canAnswer`).
    var span: CachePartialContent.Span? {
        guard status.code == 206, let span = headers[values: .contentRange].first.flatMap(CachePartialContent.span(contentRange:)),
            Int64(body.count) == Int64(span.count)
        else { return nil }
        return span
    }
}
