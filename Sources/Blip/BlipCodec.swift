import CZlib

/// The running CRC-32 of one direction: each frame's trailer is the zlib CRC of every uncompressed byte of message
/// data sent that way so far, this frame's included (LiteCore `Codec.cc`); ACK frames neither carry nor feed it.
struct BlipChecksum {
    private(set) var value = UInt32(truncatingIfNeeded: crc32(0, nil, 0))

    mutating func add(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        var rest = bytes.count
        var pointer = base.assumingMemoryBound(to: Bytef.self)
        var crc = UInt(value)
        while rest > 0 {
            let step = min(rest, Int(UInt32.max >> 1))
            crc = crc32(crc, pointer, uInt(step))
            pointer += step
            rest -= step
        }
        value = UInt32(truncatingIfNeeded: crc)
    }

    mutating func add(_ bytes: ArraySlice<UInt8>) { bytes.withUnsafeBytes { add($0) } }
}

/// The outgoing direction's deflate stream: raw deflate (no zlib or gzip wrapper), level 6 and memLevel 9 as
/// LiteCore sets them, one stream for the life of the connection, each compressed frame ended by a sync flush whose
/// final `00 00 FF FF` is not sent. With the same settings zlib gives LiteCore's own bytes.
final class BlipDeflater {
    // zlib keeps a pointer back to the z_stream, so it must not move: it lives on the heap.
    private let stream: UnsafeMutablePointer<z_stream>
    private let ready: Bool
    /// The output step, kept: a fresh zero-filled buffer per frame was an allocation and a memset per frame.
    private var scratch = [UInt8](repeating: 0, count: 16 * 1024 + 64)

    init() {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        ready =
            deflateInit2_(
                stream, 6, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                Int32(MemoryLayout<z_stream>.size)) == Z_OK
    }

    deinit {
        if ready { deflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Compresses `input` and sync-flushes, appending the output without its `00 00 FF FF` tail.
    func compress(_ input: ArraySlice<UInt8>, into output: inout [UInt8]) throws(BlipError) {
        guard ready else { throw .corrupt("zlib could not start a deflate stream.") }
        let start = output.count
        var code = Z_OK
        input.withUnsafeBytes { raw in
            stream.pointee.next_in = UnsafeMutablePointer(
                mutating: raw.baseAddress?.assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(raw.count)
            repeat {
                scratch.withUnsafeMutableBytes { out in
                    stream.pointee.next_out = out.baseAddress?.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_out = uInt(out.count)
                    code = deflate(stream, Z_SYNC_FLUSH)
                }
                let produced = scratch.count - Int(stream.pointee.avail_out)
                output += scratch[0..<produced]
            } while code == Z_OK && stream.pointee.avail_out == 0
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        guard code == Z_OK || code == Z_BUF_ERROR, output.count - start >= 4,
            Array(output.suffix(4)) == [0, 0, 0xFF, 0xFF]
        else { throw .corrupt("zlib could not compress a frame (\(code)).") }
        output.removeLast(4)
    }
}

/// The incoming direction's inflate stream: the four CRC bytes of a compressed frame stand where the flush's
/// `00 00 FF FF` was, so those are put back before inflating (as LiteCore does in place). Output is produced in
/// steps and counted against a limit as it appears, so a deflate bomb stops at the limit.
final class BlipInflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private let ready: Bool
    private var ended = false
    /// Output per `inflate` call, in bytes (64 KiB).
    static let stepBytes = 64 * 1024
    /// The output step, allocated at the first compressed frame and kept.
    private var scratch: [UInt8] = []

    init() {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        ready = inflateInit2_(stream, -MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK
    }

    deinit {
        if ready { inflateEnd(stream) }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Inflates one frame's compressed payload (CRC removed), appending to `output`.
    /// - Parameters:
    ///   - limit: Most bytes this frame may add to `output`.
    ///   - tooBig: The error for output past `limit` (which limit it is).
    /// - Throws: `.corrupt` for data that does not inflate, `tooBig` past `limit`.
    func inflate(
        _ payload: ArraySlice<UInt8>, into output: inout [UInt8], limit: Int, tooBig: BlipError
    ) throws(BlipError) {
        guard ready, !ended else { throw .corrupt("The compressed stream cannot continue.") }
        var input = Array(payload)
        input += [0, 0, 0xFF, 0xFF]
        if scratch.isEmpty { scratch = [UInt8](repeating: 0, count: Self.stepBytes) }
        var produced = 0
        var code = Z_OK
        var failure: BlipError?
        input.withUnsafeMutableBytes { raw in
            stream.pointee.next_in = raw.baseAddress?.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_in = uInt(raw.count)
            while true {
                scratch.withUnsafeMutableBytes { out in
                    stream.pointee.next_out = out.baseAddress?.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_out = uInt(out.count)
                    code = CZlib.inflate(stream, Z_SYNC_FLUSH)
                }
                let step = scratch.count - Int(stream.pointee.avail_out)
                produced += step
                if produced > limit {
                    failure = tooBig
                    break
                }
                output += scratch[0..<step]
                if code == Z_STREAM_END {
                    ended = true
                    if stream.pointee.avail_in > 0 {
                        failure = .corrupt("Data after the end of the compressed stream.")
                    }
                    break
                }
                if code != Z_OK && code != Z_BUF_ERROR {
                    failure = .corrupt("A compressed frame does not inflate (zlib \(code)).")
                    break
                }
                // Done when zlib has taken every byte and had room left: nothing more is pending.
                if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { break }
                if code == Z_BUF_ERROR && stream.pointee.avail_out > 0 {
                    failure = .corrupt("A compressed frame is truncated.")
                    break
                }
            }
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        if let failure {
            ended = true
            throw failure
        }
    }
}
