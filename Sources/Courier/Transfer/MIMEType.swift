/// Media types guessed from file name extensions, for multipart file parts sent without an explicit
/// content type.
///
/// A short table of the common types (what browsers and `curl -F` guess for everyday files); anything
/// else is `application/octet-stream`, "bytes of no known type" (RFC 9110 §8.3). Matching ignores case.
enum MIMEType {
    /// The type sent for an extension not in the table, or a name without an extension.
    static let fallback = "application/octet-stream"

    /// The media type for a file name extension.
    /// - Parameter pathExtension: The extension without its dot (`"png"`, `"JSON"`); may be empty.
    /// - Returns: The media type, or ``fallback``.
    static func forPathExtension(_ pathExtension: String) -> String {
        table[pathExtension.lowercased()] ?? fallback
    }

    /// The media type for a file name, from the text after its last dot.
    /// - Parameter fileName: A file name such as `"photo.JPG"`.
    /// - Returns: The media type, or ``fallback`` when the name has no extension.
    static func forFileName(_ fileName: String) -> String {
        guard let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex else { return fallback }
        return forPathExtension(String(fileName[fileName.index(after: dot)...]))
    }

    static let table: [String: String] = [
        // Text
        "txt": "text/plain", "text": "text/plain", "log": "text/plain",
        "html": "text/html", "htm": "text/html", "css": "text/css", "csv": "text/csv",
        "md": "text/markdown", "xml": "application/xml", "ics": "text/calendar",
        "js": "text/javascript", "mjs": "text/javascript",
        // Data
        "json": "application/json", "geojson": "application/geo+json", "yaml": "application/yaml",
        "yml": "application/yaml", "pdf": "application/pdf", "rtf": "application/rtf",
        "wasm": "application/wasm",
        // Archives
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip",
        "tar": "application/x-tar", "bz2": "application/x-bzip2", "xz": "application/x-xz",
        "7z": "application/x-7z-compressed",
        // Images
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
        "webp": "image/webp", "svg": "image/svg+xml", "ico": "image/vnd.microsoft.icon",
        "bmp": "image/bmp", "tif": "image/tiff", "tiff": "image/tiff", "heic": "image/heic",
        "heif": "image/heif", "avif": "image/avif",
        // Audio and video
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "wav": "audio/wav",
        "ogg": "audio/ogg", "flac": "audio/flac", "opus": "audio/opus",
        "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm",
        "mkv": "video/x-matroska", "avi": "video/x-msvideo",
        // Fonts
        "woff": "font/woff", "woff2": "font/woff2", "ttf": "font/ttf", "otf": "font/otf",
        // Office documents
        "doc": "application/msword",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text", "epub": "application/epub+zip",
    ]
}
