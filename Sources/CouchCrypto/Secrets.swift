import COpenSSL

/// Keyed hashing, password hashing and randomness for authentication.
public enum Secrets {
    /// HMAC-SHA256 of `message` under `key`.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = key.withUnsafeBufferPointer { k in
            message.withUnsafeBufferPointer { m in
                out.withUnsafeMutableBufferPointer { o in
                    HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress, m.count, o.baseAddress, &length)
                }
            }
        }
        return ok == nil ? [] : Array(out.prefix(Int(length)))
    }

    /// PBKDF2-HMAC-SHA256 of a password, as stored for server admins and `_users`.
    public static func pbkdf2SHA256(password: [UInt8], salt: [UInt8], iterations: Int, length: Int = 32) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        let chars = password.map { CChar(bitPattern: $0) }
        let ok = chars.withUnsafeBufferPointer { p in
            salt.withUnsafeBufferPointer { s in
                out.withUnsafeMutableBufferPointer { o in
                    PKCS5_PBKDF2_HMAC(
                        p.baseAddress, Int32(p.count), s.baseAddress, Int32(s.count), Int32(iterations), EVP_sha256(),
                        Int32(length), o.baseAddress)
                }
            }
        }
        return ok == 1 ? out : []
    }

    /// Cryptographically secure random bytes.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let ok = out.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        if ok != 1 {
            // libcrypto's generator failing is not recoverable; fall back to the system generator.
            var rng = SystemRandomNumberGenerator()
            for i in out.indices { out[i] = UInt8.random(in: 0...255, using: &rng) }
        }
        return out
    }

    /// Compares two byte strings in time that depends only on their lengths.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }
}
