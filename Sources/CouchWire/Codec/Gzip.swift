import CZlib

/// One-shot gzip (RFC 1952) over zlib. For streams use ``GzipDecoder`` and ``GzipEncoder``.
public enum Gzip {
    /// Decompresses a whole gzip body.
    /// - Parameters:
    ///   - bytes: One or more concatenated gzip members.
    ///   - limit: Most decoded bytes to accept, in bytes.
    /// - Returns: The decoded bytes.
    /// - Throws: ``GzipError``: `.corrupt`, `.truncated`, or `.limitExceeded`.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(GzipError) -> [UInt8] {
        let decoder = try GzipDecoder(limit: limit)
        let output = try decoder.decode(bytes)
        try decoder.finish()
        return output
    }

    /// Compresses bytes into one gzip member.
    /// - Parameters:
    ///   - bytes: The data.
    ///   - level: zlib level 0 to 9, or -1 for zlib's default.
    public static func compress(_ bytes: [UInt8], level: Int32 = -1) -> [UInt8] {
        let encoder = GzipEncoder(level: level)
        return encoder.encode(bytes) + encoder.finish()
    }
}
