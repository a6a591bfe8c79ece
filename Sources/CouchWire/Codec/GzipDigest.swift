import CZlib
import CouchCrypto

/// The md5 of the gzip stream CouchDB 3.4.3 writes when it stores an attachment compressed: zlib's deflate at
/// level 8 (`[attachments] compression_level`), a gzip wrapper (window bits 15 + 16), memory level 8, the default
/// strategy, fed without flushes until the end. zlib's output depends only on those settings and the bytes, not on
/// how they are split, so the digest matches CouchDB's for the same bytes; only the md5 is kept, never the
/// compressed bytes, so memory is one step buffer whatever the size.
public final class GzipDigest {
    // zlib keeps a pointer back to the z_stream, so it must not move: it lives on the heap.
    private let stream: UnsafeMutablePointer<z_stream>
    private let md5 = Digest(.md5)
    private var output = [UInt8](repeating: 0, count: 64 * 1024)
    private var finished = false

    /// - Throws: `.unavailable` if zlib cannot allocate its state.
    public init() throws(GzipError) {
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let code = deflateInit2_(
            stream, 8, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
            Int32(MemoryLayout<z_stream>.size))
        guard code == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw .unavailable(code: code)
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Compresses the next bytes into the digest.
    public func update(_ bytes: [UInt8]) {
        guard !finished, !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { run($0, flush: Z_NO_FLUSH) }
    }

    /// Ends the stream; the md5 of all the gzip bytes (16 bytes).
    public func finalize() -> [UInt8] {
        if !finished { run(UnsafeRawBufferPointer(start: nil, count: 0), flush: Z_FINISH) }
        finished = true
        return md5.finalize()
    }

    /// The md5 of CouchDB's gzip of `bytes`, in one call.
    public static func md5(of bytes: [UInt8]) throws(GzipError) -> [UInt8] {
        let digest = try GzipDigest()
        digest.update(bytes)
        return digest.finalize()
    }

    private func run(_ input: UnsafeRawBufferPointer, flush: Int32) {
        stream.pointee.next_in = UnsafeMutablePointer(
            mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        output.withUnsafeMutableBytes { out in
            guard let base = out.baseAddress?.assumingMemoryBound(to: Bytef.self) else { return }
            while true {
                stream.pointee.next_out = base
                stream.pointee.avail_out = uInt(out.count)
                let code = deflate(stream, flush)
                let produced = out.count - Int(stream.pointee.avail_out)
                if produced > 0 { md5.update(UnsafeRawBufferPointer(rebasing: out[0..<produced])) }
                // deflate never fails on valid state; it is done when it has input left to take no more and,
                // when finishing, has written the trailer.
                if code == Z_STREAM_END || code < 0 { break }
                if flush == Z_NO_FLUSH && stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { break }
            }
        }
    }
}
