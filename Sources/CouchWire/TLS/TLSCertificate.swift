import COpenSSL
import Foundation

/// An X.509 certificate (OpenSSL's `X509`, freed with the value).
///
/// `@unchecked Sendable`: the certificate is never modified after it is made, and OpenSSL's reads of an
/// `X509` are thread-safe.
public final class TLSCertificate: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of one reference to `pointer`.
    init(owning pointer: OpaquePointer) { self.pointer = pointer }

    deinit { X509_free(pointer) }

    /// The first certificate of a PEM text.
    public convenience init(pem: [UInt8]) throws(TLSError) {
        ERR_clear_error()
        let certificate: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        guard let certificate else {
            throw .configuration(TLSError.drainQueue(fallback: "no PEM certificate found"))
        }
        self.init(owning: certificate)
    }

    /// The first certificate of a PEM file.
    public convenience init(pemFile path: String) throws(TLSError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .configuration("cannot read certificate file '\(path)'")
        }
        do throws(TLSError) {
            try self.init(pem: Array(data))
        } catch {
            throw .configuration("\(path): \(error.description)")
        }
    }

    /// The DER encoding.
    public var der: [UInt8] {
        let length = i2d_X509(pointer, nil)
        guard length > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            _ = i2d_X509(pointer, &cursor)
        }
        return bytes
    }

    /// The PEM encoding (`-----BEGIN CERTIFICATE-----`…).
    public var pem: [UInt8] {
        MemoryBIO.collect { bio in PEM_write_bio_X509(bio, pointer) == 1 } ?? []
    }

    /// SHA-256 of the DER encoding.
    public var fingerprint: TLSFingerprint { TLSFingerprint(der: der) }

    /// When the certificate stops being valid (`notAfter`).
    public var notAfter: Date? { Self.date(X509_get0_notAfter(pointer)) }

    /// When the certificate starts being valid (`notBefore`).
    public var notBefore: Date? { Self.date(X509_get0_notBefore(pointer)) }

    /// The DNS names and IP addresses (as text) of the subject alternative name extension.
    public var subjectAlternativeNames: [String] {
        guard let raw = X509_get_ext_d2i(pointer, NID_subject_alt_name, nil, nil) else { return [] }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        var result: [String] = []
        for index in 0..<OPENSSL_sk_num(names) {
            guard let entry = OPENSSL_sk_value(names, index)?.assumingMemoryBound(to: GENERAL_NAME.self) else {
                continue
            }
            var kind: Int32 = 0
            guard let value = GENERAL_NAME_get0_value(entry, &kind) else { continue }
            let string = value.assumingMemoryBound(to: ASN1_STRING.self)
            let count = Int(ASN1_STRING_length(string))
            guard let data = ASN1_STRING_get0_data(string), count > 0 else { continue }
            let bytes = Array(UnsafeBufferPointer(start: data, count: count))
            if kind == GEN_DNS {
                result.append(String(decoding: bytes, as: UTF8.self))
            } else if kind == GEN_IPADD, let text = Self.ipText(bytes) {
                result.append(text)
            }
        }
        return result
    }

    /// Whether `key` is this certificate's private key.
    public func matches(_ key: TLSPrivateKey) -> Bool {
        ERR_clear_error()
        defer { ERR_clear_error() }
        return X509_check_private_key(pointer, key.pointer) == 1
    }

    private static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }

    private static func ipText(_ bytes: [UInt8]) -> String? {
        let family: Int32
        switch bytes.count {
        case 4: family = AF_INET
        case 16: family = AF_INET6
        default: return nil
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let ok = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) != nil }
        return ok ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }
}

/// A private key (OpenSSL's `EVP_PKEY`, freed with the value): RSA or EC from PEM, or a new P-256 key.
///
/// `@unchecked Sendable`: like a certificate, the key is never modified after it is made (it is only read: to
/// sign, to compare, to write out as PEM), and OpenSSL's reads of an `EVP_PKEY` are thread-safe.
public final class TLSPrivateKey: @unchecked Sendable {
    let pointer: OpaquePointer

    init(owning pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    /// A new EC P-256 key.
    public static func generateP256() throws(TLSError) -> TLSPrivateKey {
        ERR_clear_error()
        guard let key = couchlite_generate_p256_key() else {
            throw .configuration(TLSError.drainQueue(fallback: "cannot generate an EC P-256 key"))
        }
        return TLSPrivateKey(owning: key)
    }

    /// The first private key of a PEM text (PKCS#8, or traditional RSA/EC). An encrypted key is refused
    /// rather than prompting for a passphrase.
    public convenience init(pem: [UInt8]) throws(TLSError) {
        ERR_clear_error()
        let key: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let key else {
            throw .configuration(TLSError.drainQueue(fallback: "no unencrypted PEM private key found"))
        }
        self.init(owning: key)
    }

    /// The first private key of a PEM file.
    public convenience init(pemFile path: String) throws(TLSError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .configuration("cannot read key file '\(path)'")
        }
        do throws(TLSError) {
            try self.init(pem: Array(data))
        } catch {
            throw .configuration("\(path): \(error.description)")
        }
    }

    /// The unencrypted PKCS#8 PEM encoding (`-----BEGIN PRIVATE KEY-----`…).
    public var pem: [UInt8] {
        MemoryBIO.collect { bio in PEM_write_bio_PrivateKey(bio, pointer, nil, nil, 0, nil, nil) == 1 } ?? []
    }
}

/// Runs a writer against a memory BIO and returns what it wrote.
enum MemoryBIO {
    static func collect(_ write: (OpaquePointer) -> Bool) -> [UInt8]? {
        guard let bio = BIO_new(BIO_s_mem()) else { return nil }
        defer { BIO_free(bio) }
        guard write(bio) else {
            ERR_clear_error()
            return nil
        }
        var start: UnsafeMutablePointer<CChar>?
        let length = couchlite_bio_mem_contents(bio, &start)
        guard let start, length > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: start, count: Int(length)))
    }
}
