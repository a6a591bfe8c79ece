import COpenSSL

/// A streaming message digest over libcrypto's EVP interface.
///
/// Feed bytes with `update` as they arrive (an attachment is hashed while it streams to disk) and
/// read the result once with `finalize`. Not thread-safe: one digest belongs to one stream.
public final class Digest {
    /// The hash functions couchlite needs: md5 for CouchDB digests and rev ids, sha1 for
    /// Couchbase Lite digests, sha256 for passwords and cookies.
    public enum Algorithm: Sendable {
        case md5, sha1, sha256

        var evp: OpaquePointer? {
            switch self {
            case .md5: EVP_md5()
            case .sha1: EVP_sha1()
            case .sha256: EVP_sha256()
            }
        }
    }

    public let algorithm: Algorithm
    private let context: OpaquePointer?
    private var finished = false

    public init(_ algorithm: Algorithm) {
        self.algorithm = algorithm
        self.context = EVP_MD_CTX_new()
        // Initialisation only fails on allocation failure; `finalize` then reports an empty digest.
        _ = EVP_DigestInit_ex(context, algorithm.evp, nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds bytes to the digest.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard !finished, let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = EVP_DigestUpdate(context, base, bytes.count)
    }

    /// Adds bytes to the digest.
    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Adds bytes to the digest.
    public func update(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Returns the digest; the object accepts no more input afterwards.
    public func finalize() -> [UInt8] {
        finished = true
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = out.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context, $0.baseAddress, &length) }
        return ok == 1 ? Array(out.prefix(Int(length))) : []
    }

    /// One-shot digest of a byte sequence.
    public static func hash(_ algorithm: Algorithm, _ bytes: [UInt8]) -> [UInt8] {
        let digest = Digest(algorithm)
        digest.update(bytes)
        return digest.finalize()
    }
}

extension Array where Element == UInt8 {
    /// Lowercase hexadecimal, as CouchDB writes rev ids.
    public var hexString: String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
