import COpenSSL

/// Settings shared by many TLS connections (OpenSSL's `SSL_CTX`, freed with the value): a server's
/// certificate and key, or a client's trust.
///
/// Every context speaks TLS 1.2 and 1.3 only, with AEAD cipher suites and forward secrecy (ECDHE with
/// AES-GCM or ChaCha20-Poly1305 for 1.2; OpenSSL's 1.3 suites), no renegotiation or compression, and
/// ALPN `http/1.1`. Buffers are released while a connection is idle, so thousands of idle connections
/// cost little.
///
/// `@unchecked Sendable`: the `SSL_CTX` is configured once in `init` and only read afterwards, which
/// OpenSSL allows from any number of threads.
public final class TLSContext: @unchecked Sendable {
    public enum Role: Sendable { case server, client }

    let pointer: OpaquePointer
    public let role: Role
    /// The client's trust (`.insecure` for a server context, which does not verify clients).
    public let trust: TLSTrust
    /// The server's leaf certificate (nil for a client context).
    public let certificate: TLSCertificate?

    /// TLS 1.2 suites: ECDHE key exchange, AEAD ciphers only (Mozilla's "intermediate" list without DHE).
    static let tls12Ciphers = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
        "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")
    static let tls13Suites = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

    private init(pointer: OpaquePointer, role: Role, trust: TLSTrust, certificate: TLSCertificate?) {
        self.pointer = pointer
        self.role = role
        self.trust = trust
        self.certificate = certificate
    }

    deinit { SSL_CTX_free(pointer) }

    /// A server context from PEM files: `certificateFile` holds the leaf certificate, optionally followed by
    /// its intermediates; `keyFile` an unencrypted RSA or EC key (an encrypted one is refused, never prompted for).
    /// - Throws: `.configuration` naming the file and OpenSSL's reason, or a key that does not match.
    public static func server(certificateFile: String, keyFile: String) throws(TLSError) -> TLSContext {
        let context = try makeContext(server: true)
        ERR_clear_error()
        guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
            let reason = TLSError.drainQueue(fallback: "unreadable")
            SSL_CTX_free(context)
            throw .configuration("certificate file '\(certificateFile)': \(reason)")
        }
        guard SSL_CTX_use_PrivateKey_file(context, keyFile, SSL_FILETYPE_PEM) == 1 else {
            var reason = TLSError.drainQueue(fallback: "unreadable")
            if reason.contains("mismatch") { reason = "does not match the certificate (\(reason))" }
            SSL_CTX_free(context)
            throw .configuration("key file '\(keyFile)': \(reason)")
        }
        return try finishServer(context, description: "key file '\(keyFile)'")
    }

    /// A server context from a certificate and its key in memory (`--tls auto`, tests).
    public static func server(certificate: TLSCertificate, key: TLSPrivateKey) throws(TLSError) -> TLSContext {
        guard certificate.matches(key) else { throw .configuration("the key does not match the certificate") }
        let context = try makeContext(server: true)
        ERR_clear_error()
        guard SSL_CTX_use_certificate(context, certificate.pointer) == 1,
            SSL_CTX_use_PrivateKey(context, key.pointer) == 1
        else {
            let reason = TLSError.drainQueue(fallback: "refused")
            SSL_CTX_free(context)
            throw .configuration("certificate or key: \(reason)")
        }
        return try finishServer(context, description: "the key")
    }

    /// A client context that trusts servers as `trust` says. Host names are checked per connection
    /// (`TLSStream.client`).
    /// - Throws: `.configuration` when the CA file cannot be read.
    public static func client(trust: TLSTrust) throws(TLSError) -> TLSContext {
        let context = try makeContext(server: false)
        ERR_clear_error()
        switch trust {
        case .verified(let caFile, let systemStore):
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if systemStore { _ = SSL_CTX_set_default_verify_paths(context) }
            if let caFile, SSL_CTX_load_verify_locations(context, caFile, nil) != 1 {
                let reason = TLSError.drainQueue(fallback: "unreadable")
                SSL_CTX_free(context)
                throw .configuration("CA file '\(caFile)': \(reason)")
            }
        case .pinned, .insecure:
            // The handshake accepts any certificate; `.pinned` compares the fingerprint right after it.
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
        ERR_clear_error()
        return TLSContext(pointer: context, role: .client, trust: trust, certificate: nil)
    }

    private static func makeContext(server: Bool) throws(TLSError) -> OpaquePointer {
        ERR_clear_error()
        guard let method = server ? TLS_server_method() : TLS_client_method(), let context = SSL_CTX_new(method)
        else { throw .configuration(TLSError.drainQueue(fallback: "cannot create a TLS context")) }
        guard couchlite_tls_apply_policy(context) == 1,
            SSL_CTX_set_cipher_list(context, tls12Ciphers) == 1,
            SSL_CTX_set_ciphersuites(context, tls13Suites) == 1
        else {
            let reason = TLSError.drainQueue(fallback: "refused")
            SSL_CTX_free(context)
            throw .configuration("TLS policy: \(reason)")
        }
        // An encrypted key file would otherwise make OpenSSL prompt on the terminal.
        SSL_CTX_set_default_passwd_cb(context) { _, _, _, _ in 0 }
        return context
    }

    private static func finishServer(_ context: OpaquePointer, description: String) throws(TLSError) -> TLSContext {
        guard SSL_CTX_check_private_key(context) == 1 else {
            SSL_CTX_free(context)
            ERR_clear_error()
            throw .configuration("\(description) does not match the certificate")
        }
        // Bounded TLS 1.2 session cache (TLS 1.3 resumes with stateless tickets).
        _ = couchlite_ssl_ctx_set_session_cache_size(context, 1024)
        SSL_CTX_set_alpn_select_cb(context, selectHTTP11, nil)
        guard let leaf = SSL_CTX_get0_certificate(context), X509_up_ref(leaf) == 1 else {
            SSL_CTX_free(context)
            throw .configuration("no certificate")
        }
        ERR_clear_error()
        return TLSContext(
            pointer: context, role: .server, trust: .insecure, certificate: TLSCertificate(owning: leaf))
    }
}

/// The server's ALPN choice: `http/1.1` when the client offers it; otherwise no ALPN at all (the client
/// may still speak HTTP/1.1 without naming it).
private func selectHTTP11(
    _ ssl: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ outLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32, _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    guard let offered, let out, let outLength else { return SSL_TLSEXT_ERR_NOACK }
    let wanted = Array("http/1.1".utf8)
    var index = 0
    let count = Int(offeredLength)
    while index < count {
        let length = Int(offered[index])
        let start = index + 1
        guard start + length <= count else { break }
        if length == wanted.count, (0..<length).allSatisfy({ offered[start + $0] == wanted[$0] }) {
            out.pointee = offered + start
            outLength.pointee = UInt8(length)
            return SSL_TLSEXT_ERR_OK
        }
        index = start + length
    }
    return SSL_TLSEXT_ERR_NOACK
}
