import CZlib
import CouchWire

// The server only decodes gzip (request bodies, attachments sent compressed); making gzip is for the tests and
// the fuzz targets, which build this same file into their harness (fuzz/run.sh).

extension Gzip {
    /// Compresses bytes into one gzip member.
    /// - Parameters:
    ///   - bytes: The data.
    ///   - level: zlib level 0 to 9, or -1 for zlib's default.
    static func compress(_ bytes: [UInt8], level: Int32 = -1) -> [UInt8] {
        let encoder = GzipEncoder(level: level)
        return encoder.encode(bytes) + encoder.finish()
    }
}

/// Streaming gzip encoder.
///
/// Not thread-safe: one encoder belongs to one stream.
final class GzipEncoder {
    /// Output collected per `deflate` call, in bytes (64 KiB).
    static let stepSize = 64 * 1024

    // zlib keeps a pointer back to the z_stream, so it must not move: it lives on the heap.
    private let stream: UnsafeMutablePointer<z_stream>
    private var finished = false
    /// The step buffer `deflate` writes into, allocated at the first call and kept: a fresh zero-filled 64 KiB
    /// array per `encode` and `finish` made every small piece (the gzip fuzz target's round trip) cost a 64 KiB
    /// allocation and memset (most of the memset that was a fifth of that target's CPU).
    private var scratch: UnsafeMutableRawBufferPointer?

    /// Creates an encoder.
    /// - Parameter level: zlib level 0 to 9, or -1 for zlib's default (6). CouchDB uses 8.
    init(level: Int32 = -1) {
        precondition((-1...9).contains(level), "zlib levels are -1...9")
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // 16 + MAX_WBITS: gzip wrapper, 32 KiB window; memLevel 8 is zlib's default.
        let code = deflateInit2_(
            stream, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
            Int32(MemoryLayout<z_stream>.size))
        // Only allocation failure can make this fail; a process out of memory cannot go on.
        precondition(code == Z_OK, "deflateInit2 failed: \(code)")
    }

    deinit {
        scratch?.deallocate()
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Compresses the next bytes; returns whatever output zlib releases (often none).
    func encode(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(!finished, "encode after finish")
        guard let base = input.baseAddress, input.count > 0 else { return [] }
        var output: [UInt8] = []
        var offset = 0
        while offset < input.count {
            let piece = min(input.count - offset, 1 << 30)
            stream.pointee.next_in = UnsafeMutablePointer(
                mutating: base.advanced(by: offset).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(piece)
            deflateAll(flush: Z_NO_FLUSH, into: &output)
            offset += piece
        }
        return output
    }

    /// Compresses the next bytes.
    func encode(_ input: [UInt8]) -> [UInt8] {
        input.withUnsafeBytes { encode($0) }
    }

    /// Ends the stream; returns the remaining output including the gzip trailer.
    func finish() -> [UInt8] {
        precondition(!finished, "finish called twice")
        finished = true
        var output: [UInt8] = []
        deflateAll(flush: Z_FINISH, into: &output)
        return output
    }

    private func deflateAll(flush: Int32, into output: inout [UInt8]) {
        let scratch = self.scratch ?? UnsafeMutableRawBufferPointer.allocate(byteCount: Self.stepSize, alignment: 1)
        self.scratch = scratch
        while true {
            stream.pointee.next_out = scratch.baseAddress?.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(scratch.count)
            let code = deflate(stream, flush)
            let produced = scratch.count - Int(stream.pointee.avail_out)
            output.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<produced]))
            if flush == Z_FINISH {
                // Z_OK: more output pending; Z_STREAM_END: done; anything else cannot progress.
                if code != Z_OK { break }
            } else if produced < scratch.count {
                // zlib guarantees that leftover output space means all input was consumed.
                break
            }
        }
        stream.pointee.next_in = nil
        stream.pointee.avail_in = 0
        stream.pointee.next_out = nil
        stream.pointee.avail_out = 0
    }
}
