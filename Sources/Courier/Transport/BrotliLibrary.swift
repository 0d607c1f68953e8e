#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// libbrotli's decoder (`libbrotlidec`), loaded at run time: `br` bodies are decoded when it is present
/// (Debian's `libbrotli1`, installed with curl on most systems; Homebrew's `brotli` on macOS) and simply
/// not asked for when it is not, so Courier builds and runs without it and without its headers.
///
/// The entry points used are the decoder's stable C ABI (unchanged since brotli 1.0):
/// `BrotliDecoderCreateInstance`, `BrotliDecoderDecompressStream`, `BrotliDecoderDestroyInstance`.
struct BrotliLibrary: @unchecked Sendable {
    // @unchecked: the fields are C function pointers into a library that is never unloaded, written once
    // when the value is made and only read after; calling them is thread-safe for distinct decoder states.

    typealias CreateInstance = @convention(c) (OpaquePointer?, OpaquePointer?, UnsafeMutableRawPointer?) -> OpaquePointer?
    typealias DestroyInstance = @convention(c) (OpaquePointer?) -> Void
    typealias DecompressStream = @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<Int>, UnsafeMutablePointer<UnsafePointer<UInt8>?>,
        UnsafeMutablePointer<Int>, UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, UnsafeMutablePointer<Int>?
    ) -> Int32

    let createInstance: CreateInstance
    let destroyInstance: DestroyInstance
    let decompressStream: DecompressStream

    /// `BrotliDecoderResult`.
    enum Result: Int32 {
        case error = 0, success = 1, needsMoreInput = 2, needsMoreOutput = 3
    }

    /// The library, or `nil` when it is not installed: loaded once, on first use.
    static let shared: BrotliLibrary? = load()

    /// Whether `br` bodies can be decoded here.
    static var isAvailable: Bool { shared != nil }

    /// Linux: names the dynamic linker looks up in the system's library folders. macOS: absolute paths
    /// only, since dyld may look for a bare name in the working directory.
    private static let candidates = [
        "libbrotlidec.so.1", "libbrotlidec.so",
        "/opt/homebrew/lib/libbrotlidec.1.dylib", "/usr/local/lib/libbrotlidec.1.dylib",
    ]

    private static func load() -> BrotliLibrary? {
        for name in candidates {
            guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else { continue }
            guard let create = dlsym(handle, "BrotliDecoderCreateInstance"),
                  let destroy = dlsym(handle, "BrotliDecoderDestroyInstance"),
                  let decompress = dlsym(handle, "BrotliDecoderDecompressStream")
            else {
                dlclose(handle)
                continue
            }
            return BrotliLibrary(
                createInstance: unsafeBitCast(create, to: CreateInstance.self),
                destroyInstance: unsafeBitCast(destroy, to: DestroyInstance.self),
                decompressStream: unsafeBitCast(decompress, to: DecompressStream.self))
        }
        return nil
    }
}
