import CZlib

/// Streaming gzip decoder with a cap on output, for `Content-Encoding: gzip` JSON parts
/// (Couchbase Lite) and `encoding: gzip` attachments.
///
/// Feed compressed bytes as they arrive; each call returns what they decode to. Output is
/// produced in 64 KiB steps and counted as it is produced, so a zip bomb is stopped as soon as it
/// passes `limit`, having allocated at most `limit` bytes plus one step. Concatenated gzip
/// members (RFC 1952 §2.2) decode as one stream, like `gunzip`.
///
/// Not thread-safe: one decoder belongs to one stream.
public final class GzipDecoder {
    /// Most bytes this decoder will produce in total.
    public let limit: Int
    /// Bytes produced so far.
    public private(set) var totalOut = 0

    /// Output produced per `inflate` call, in bytes (64 KiB).
    static let stepSize = 64 * 1024

    // zlib keeps a pointer back to the z_stream, so it must not move: it lives on the heap.
    private let stream: UnsafeMutablePointer<z_stream>
    /// Whether the last member ended exactly at the end of the input so far.
    private var atMemberEnd = false
    private var sawInput = false
    private var failure: GzipError?
    /// The step buffer `inflate` writes into, allocated at the first input and kept: a fresh zero-filled 64 KiB
    /// array per call made every small input (a slow upload's packets; the fuzz target feeding single bytes) cost
    /// a 64 KiB allocation and memset.
    private var scratch: UnsafeMutableRawBufferPointer?

    /// Creates a decoder.
    /// - Parameter limit: Most decoded bytes to accept, in bytes.
    /// - Throws: `.unavailable` if zlib cannot allocate its state.
    public init(limit: Int) throws(GzipError) {
        self.limit = limit
        stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // 16 + MAX_WBITS: gzip wrapper only, 32 KiB window.
        let code = inflateInit2_(stream, 16 + MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        guard code == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw .unavailable(code: code)
        }
    }

    deinit {
        scratch?.deallocate()
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Decodes the next compressed bytes into one array.
    ///
    /// Everything `input` decodes to is held at once, up to `limit`: use it only where `limit` is small
    /// (JSON parts); attachments go through ``decode(_:sink:)``.
    /// - Parameter input: Any number of bytes, continuing the previous call.
    /// - Returns: The decoded bytes they yield (possibly none).
    /// - Throws: `.corrupt`, or `.limitExceeded`; the decoder then refuses further input.
    public func decode(_ input: UnsafeRawBufferPointer) throws(GzipError) -> [UInt8] {
        var output: [UInt8] = []
        do {
            try decode(input) { output.append(contentsOf: $0) }
        } catch let error as GzipError {
            throw error
        } catch {
            preconditionFailure("Invalid state: a non-throwing sink threw")
        }
        return output
    }

    /// Decodes the next compressed bytes, handing the output to `sink` in steps of at most 64 KiB
    /// (`stepSize`) as it is produced, so memory stays bounded however far the input expands: a
    /// 1 MB gzip bomb that inflates to 1 GiB costs one step buffer, never the gigabyte.
    /// - Parameters:
    ///   - input: Any number of bytes, continuing the previous call.
    ///   - sink: Receives each decoded step; the buffer is lent for the call only. What it throws is
    ///     rethrown, and the decoder then refuses further input.
    /// - Throws: ``GzipError`` (`.corrupt`, `.limitExceeded`) or whatever `sink` throws.
    public func decode(_ input: UnsafeRawBufferPointer, sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        if let failure { throw failure }
        do {
            try run(input, sink)
        } catch let error as GzipError {
            failure = error
            throw error
        } catch {
            failure = .corrupt
            throw error
        }
    }

    /// Decodes the next compressed bytes.
    public func decode(_ input: [UInt8]) throws(GzipError) -> [UInt8] {
        let result = input.withUnsafeBytes { buffer in Result { () throws(GzipError) in try decode(buffer) } }
        return try result.get()
    }

    /// Declares the end of the input.
    /// - Throws: `.truncated` unless the input ended exactly at the end of a gzip member.
    public func finish() throws(GzipError) {
        if let failure { throw failure }
        guard sawInput, atMemberEnd else {
            failure = .truncated
            throw .truncated
        }
    }

    private func run(_ input: UnsafeRawBufferPointer, _ sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let base = input.baseAddress, input.count > 0 else { return }
        sawInput = true
        var offset = 0
        let scratch = self.scratch ?? UnsafeMutableRawBufferPointer.allocate(byteCount: Self.stepSize, alignment: 1)
        self.scratch = scratch
        while offset < input.count {
            // avail_in is 32-bit; feed large inputs in pieces.
            let piece = min(input.count - offset, 1 << 30)
            stream.pointee.next_in = UnsafeMutablePointer(
                mutating: base.advanced(by: offset).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = uInt(piece)
            try drain(scratch, sink)
            offset += piece - Int(stream.pointee.avail_in)
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
    }

    /// Inflates until the current input is consumed and no output is pending.
    private func drain(
        _ scratch: UnsafeMutableRawBufferPointer, _ sink: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        while true {
            if atMemberEnd {
                // More bytes after a complete member: the next member starts.
                guard stream.pointee.avail_in > 0 else { return }
                guard inflateReset(stream) == Z_OK else { throw GzipError.corrupt }
                atMemberEnd = false
            }
            let room = min(Self.stepSize - 1, limit - totalOut) + 1  // no overflow for a limit of Int.max
            stream.pointee.next_out = scratch.baseAddress?.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(room)
            let code = inflate(stream, Z_NO_FLUSH)
            let produced = room - Int(stream.pointee.avail_out)
            stream.pointee.next_out = nil
            stream.pointee.avail_out = 0
            totalOut += produced
            // Checked before the sink sees the step, so no consumer ever gets a byte past the limit.
            if totalOut > limit { throw GzipError.limitExceeded(limit: limit) }
            if produced > 0 {
                try sink(UnsafeRawBufferPointer(rebasing: scratch[0..<produced]))
            }
            switch code {
            case Z_STREAM_END:
                atMemberEnd = true
            case Z_OK:
                // Output space left over means zlib wants more input.
                if produced < room, stream.pointee.avail_in == 0 { return }
            case Z_BUF_ERROR:
                // No progress possible: all input consumed (more must come) or none fits.
                if stream.pointee.avail_in == 0 { return }
                throw GzipError.corrupt
            default:
                // Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR, Z_MEM_ERROR.
                throw GzipError.corrupt
            }
        }
    }
}
