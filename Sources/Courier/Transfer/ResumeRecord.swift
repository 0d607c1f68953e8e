import Foundation
import HTTPTypes

/// What a partial download needs to be resumed: the sidecar written next to the partial file
/// (`.<name>.courier-partial.json`, see `ResumeRecordStore`).
///
/// Only validators that may go in `If-Range` are kept (RFC 9110 §13.1.5): a strong entity tag, or a
/// `Last-Modified` date that is strong in the sense of §8.8.2.2 (the response's `Date` is at least one
/// second later). A response with neither, or with a content coding (its ranges would count encoded
/// bytes, not the decoded ones on disk), gets no record: it cannot be resumed, only downloaded again.
struct ResumeRecord: Codable, Sendable, Hashable {
    /// The format of the sidecar; a record of another version is not read.
    static let currentVersion = 1

    var version: Int = ResumeRecord.currentVersion
    /// The URL the bytes came from.
    var url: String
    /// The representation's strong entity tag, quotes included, when it had one.
    var entityTag: String?
    /// The representation's `Last-Modified`, verbatim, when it is a strong validator.
    var lastModified: String?
    /// The complete length of the representation, when the server said it.
    var completeLength: Int64?
    /// The bytes of the representation on disk when the record was written.
    var bytesOnDisk: Int64

    /// The value for `If-Range`: the strong entity tag, else the date (§13.1.5 prefers the entity tag;
    /// ``ResumeValidators/record(url:headers:)`` keeps no record for a response with a weak one).
    var ifRangeValue: String? {
        if let entityTag, ResumeValidators.isStrong(entityTag) { return entityTag }
        return lastModified
    }
}

/// Validator rules of RFC 9110 §8.8 used by the resume logic.
enum ResumeValidators {
    /// Whether an entity tag is strong (§8.8.3): one `opaque-tag`, `"` then `etagc` characters (`!`,
    /// `#`-`~`, obs-text) then `"`, with no `W/`. A combined field (`"a", W/"b"`, two `ETag` fields
    /// joined) or an unterminated `"a` is not an entity tag at all, so not a strong one.
    static func isStrong(_ entityTag: String) -> Bool {
        let bytes = Array(entityTag.utf8)
        guard bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") else { return false }
        return bytes.dropFirst().dropLast().allSatisfy { $0 == 0x21 || (0x23...0x7E).contains($0) || $0 >= 0x80 }
    }

    /// Strong comparison (§8.8.3.2): both strong and the same characters.
    static func strongMatch(_ a: String, _ b: String) -> Bool {
        isStrong(a) && isStrong(b) && a == b
    }

    /// Whether a `Last-Modified` may be used as a strong validator by a client (§8.8.2.2): the
    /// response's `Date` is at least one second after it.
    static func isStrong(lastModified: String, date: String?) -> Bool {
        guard let date, let modified = HTTPDate.parse(lastModified), let sent = HTTPDate.parse(date) else { return false }
        return sent.timeIntervalSince(modified) >= 1
    }

    /// The record to keep for a full response (200) of `url`, or `nil` when it cannot be resumed: a
    /// content coding, no validator, or an entity tag that is weak (or malformed). With an entity tag
    /// the client may not fall back on the date (§13.1.5: a date only when it has no entity tag), and a
    /// weak tag may not go in `If-Range`: such a response is downloaded again from the start.
    static func record(url: String, headers: HTTPFields) -> ResumeRecord? {
        guard isIdentityEncoded(headers) else { return nil }
        if let tag = headers[.eTag], !isStrong(tag) { return nil }
        let entityTag = headers[.eTag]
        let lastModified = headers[.lastModified].flatMap { isStrong(lastModified: $0, date: headers[.date]) ? $0 : nil }
        guard entityTag != nil || lastModified != nil else { return nil }
        let length = headers[.contentLength].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        return ResumeRecord(url: url, entityTag: entityTag, lastModified: lastModified, completeLength: length, bytesOnDisk: 0)
    }

    /// Whether a 206 may be a range of the recorded representation: every validator the record holds
    /// that the 206 carries too is the same (the entity tag compared strongly, `Last-Modified`
    /// verbatim). A server that ignores `If-Range` answers a changed representation with 206 too; its
    /// validators are then what tells the two apart. A 206 that carries none of them is taken as the
    /// answer to `If-Range` (nothing contradicts it).
    static func partialMatches(_ record: ResumeRecord, _ headers: HTTPFields) -> Bool {
        if let recorded = record.entityTag, let tag = headers[.eTag], !strongMatch(tag, recorded) { return false }
        if let recorded = record.lastModified, let modified = headers[.lastModified], modified != recorded { return false }
        return true
    }

    /// Whether the response's bytes are the representation's own: no content coding, or `identity`.
    static func isIdentityEncoded(_ headers: HTTPFields) -> Bool {
        headers[values: .contentEncoding]
            .flatMap { $0.split(separator: ",") }
            .allSatisfy { $0.trimmingCharacters(in: .whitespaces).lowercased() == "identity" }
    }
}
