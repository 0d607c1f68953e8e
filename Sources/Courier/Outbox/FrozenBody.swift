import Foundation

/// How the streamed body of a frozen request (a file, or a multipart form) is rebuilt when it is
/// replayed: the row's `bodyLayout` column, as JSON.
///
/// The files are the outbox's own copies, made when the request was frozen, in
/// `<outbox directory>/bodies/<row id>/` (see ``OutboxBodyStore``): the originals may change or go away
/// meanwhile. The bytes of a form's fields and data parts stay in the row's `body` column, one after the
/// other, each part naming its range. A form keeps its boundary, so the `Content-Type` frozen with the
/// request still describes the body; `Content-Length` is measured from the copies when the replay is sent.
///
/// ```json
/// {"version":1,"kind":"multipart","boundary":"courier-0f…","parts":[
///   {"name":"album","offset":0,"length":7},
///   {"name":"photo","filename":"beach.jpg","contentType":"image/jpeg","copy":"part-1","size":48213}]}
/// ```
package struct FrozenBody: Codable, Sendable, Equatable {
    /// What the body was.
    enum Kind: String, Codable, Sendable {
        /// `RequestBody.file`: one part, a copy, no framing.
        case file
        /// `RequestBody.multipart`: parts framed with ``FrozenBody/boundary``.
        case multipart
    }

    /// One part of the body: bytes of the row, or a copied file.
    struct Part: Codable, Sendable, Equatable {
        /// The form field's name (forms only).
        var name: String?
        /// The file name reported for the part (forms only).
        var filename: String?
        /// The part's `Content-Type` (forms only).
        var contentType: String?
        /// Where the part's bytes start in the row's `body` column, for bytes kept in the row.
        var offset: Int?
        /// How many bytes of the row's `body` column are the part's.
        var length: Int?
        /// The name of the part's copy in the row's folder, for a copied file.
        var copy: String?
        /// The size of the copy, in bytes: a copy of another size is damaged.
        var size: Int64?
    }

    /// The layout's format; 1.
    var version = 1
    var kind: Kind
    /// The multipart boundary, as frozen.
    var boundary: String?
    var parts: [Part]

    /// The copied files: name in the row's folder, and size.
    var copies: [(name: String, size: Int64)] {
        parts.compactMap { part in part.copy.map { ($0, part.size ?? -1) } }
    }

    /// The layout as stored in the row.
    var text: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Reads a stored layout; `nil` when it is not one this version can rebuild, or when it does not
    /// fit the row's bytes (a damaged row).
    /// - Parameters:
    ///   - text: The `bodyLayout` column.
    ///   - bytes: The row's `body` column.
    init?(text: String, bytes: Data?) {
        guard let layout = try? JSONDecoder().decode(FrozenBody.self, from: Data(text.utf8)), layout.version == 1 else { return nil }
        let available = bytes?.count ?? 0
        for part in layout.parts {
            if let copy = part.copy {
                // A copy's name is a plain name inside the row's folder, never a path out of it.
                guard !copy.isEmpty, !copy.contains("/"), !copy.hasPrefix("."), let size = part.size, size >= 0 else { return nil }
            } else {
                // Never `offset + length`: a damaged row's numbers may overflow (a trap); damage is set aside.
                guard let offset = part.offset, let length = part.length, offset >= 0, length >= 0, offset <= available,
                    length <= available - offset
                else { return nil }
            }
        }
        switch layout.kind {
        case .file: guard layout.parts.count == 1, layout.parts[0].copy != nil else { return nil }
        case .multipart:
            guard let boundary = layout.boundary, MultipartForm.isValidBoundary(boundary), layout.parts.allSatisfy({ $0.name != nil })
            else { return nil }
        }
        self = layout
    }

    init(kind: Kind, boundary: String?, parts: [Part]) {
        self.kind = kind
        self.boundary = boundary
        self.parts = parts
    }

    /// The body to send again: the same bytes as the frozen one, its files read from the copies.
    /// - Parameters:
    ///   - folder: The row's folder of copies.
    ///   - bytes: The row's `body` column.
    ///   - contentType: A file body's `Content-Type` (the frozen request's header carries it too).
    /// - Returns: A streamed body, replayable like the original.
    func requestBody(copiesIn folder: URL, bytes: Data?, contentType: String?) -> RequestBody {
        switch kind {
        case .file:
            return .file(folder.appendingPathComponent(parts[0].copy ?? ""), contentType: contentType ?? "application/octet-stream")
        case .multipart:
            let formParts = parts.map { part -> MultipartForm.Part in
                let content: MultipartForm.Content
                if let copy = part.copy {
                    content = .file(folder.appendingPathComponent(copy))
                } else {
                    let start = (bytes?.startIndex ?? 0) + (part.offset ?? 0)
                    content = .bytes(bytes.map { Data($0[start..<(start + (part.length ?? 0))]) } ?? Data())
                }
                return MultipartForm.Part(name: part.name ?? "", filename: part.filename, contentType: part.contentType, content: content)
            }
            return .multipart(MultipartForm(checkedBoundary: boundary ?? MultipartForm.randomBoundary(), parts: formParts))
        }
    }
}
