import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One TLS connection over an already connected, non-blocking socket (OpenSSL's `SSL`, freed with the
/// value). Every wait is a `poll` on the descriptor bounded by a deadline, as for plain sockets, so a
/// stalled peer is a `.timeout`, never a hung thread.
///
/// The stream does not own the descriptor: whoever connected or accepted it closes it (after the stream
/// is done). Used from one thread at a time; `shutdown(2)` of the descriptor from another thread wakes it.
///
/// `@unchecked Sendable`: the flags and the `SSL` are touched only by the one thread using the stream at a time
/// (the connection that owns it is handed from thread to thread, never shared); another thread only ever acts on
/// the descriptor (`shutdown(2)`), never on this object.
public final class TLSStream: @unchecked Sendable {
    public let descriptor: Int32
    public let context: TLSContext
    let ssl: OpaquePointer
    /// Set once an OpenSSL call failed fatally: `SSL_shutdown` must not be called afterwards.
    private var broken = false
    private var established = false
    private var closeNotifySent = false
    /// The server's certificate as the verification saw it, kept even when it was refused.
    fileprivate var presented: TLSCertificate?
    /// The host the client asked for (SNI and name checks); nil on the server side.
    public let hostName: String?

    private init(context: TLSContext, descriptor: Int32, hostName: String?) throws(TLSError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.pointer) else {
            throw .failed(TLSError.drainQueue(fallback: "cannot create a TLS connection"))
        }
        guard let bio = TLSSocketBIO.make(descriptor: descriptor) else {
            SSL_free(ssl)
            throw .failed("cannot create a socket BIO")
        }
        // One reference for both directions, owned by `ssl` from here on.
        SSL_set_bio(ssl, bio, bio)
        self.ssl = ssl
        self.descriptor = descriptor
        self.context = context
        self.hostName = hostName
    }

    deinit { SSL_free(ssl) }

    /// The server side of an accepted connection (`context` must be a server context).
    public static func server(context: TLSContext, descriptor: Int32) throws(TLSError) -> TLSStream {
        let stream = try TLSStream(context: context, descriptor: descriptor, hostName: nil)
        SSL_set_accept_state(stream.ssl)
        return stream
    }

    /// The client side of a connection to `host` (a DNS name, or an IP address, bracketed or not): sends
    /// SNI for names (never for addresses, RFC 6066), offers ALPN `http/1.1`, and with `.verified` trust
    /// requires the certificate to name `host`.
    public static func client(context: TLSContext, descriptor: Int32, host: String) throws(TLSError) -> TLSStream {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let stream = try TLSStream(context: context, descriptor: descriptor, hostName: bare)
        let ssl = stream.ssl
        SSL_set_connect_state(ssl)
        let isAddress = Self.isIPAddress(bare)
        if !isAddress, !bare.isEmpty { _ = couchlite_ssl_set_server_name(ssl, bare) }
        let alpn: [UInt8] = [8] + Array("http/1.1".utf8)
        _ = SSL_set_alpn_protos(ssl, alpn, UInt32(alpn.count))
        if case .verified = context.trust {
            let ok =
                isAddress
                ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), bare) == 1
                : SSL_set1_host(ssl, bare) == 1
            guard ok else { throw .configuration("cannot check the certificate against host '\(host)'") }
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            // OpenSSL forgets a refused certificate; the callback keeps it for the error message.
            _ = SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(stream).toOpaque())
            SSL_set_verify(ssl, SSL_VERIFY_PEER, recordPresentedCertificate)
        }
        return stream
    }

    // MARK: - Handshake

    /// Runs the handshake until `timeout` has passed in total; a client then checks the pin, if any.
    public func handshake(timeout: Duration) throws(TLSError) { try handshake(deadline: .after(timeout)) }

    func handshake(deadline: HTTPDeadline) throws(TLSError) {
        while true {
            ERR_clear_error()
            let rc = SSL_do_handshake(ssl)
            if rc == 1 { break }
            let code = SSL_get_error(ssl, rc)
            switch code {
            case SSL_ERROR_WANT_READ: try wait(Int16(POLLIN), deadline)
            case SSL_ERROR_WANT_WRITE: try wait(Int16(POLLOUT), deadline)
            default:
                broken = true
                throw handshakeFailure(code)
            }
        }
        established = true
        if context.role == .client { try checkPeer() }
    }

    private func handshakeFailure(_ code: Int32) -> TLSError {
        if context.role == .client, case .verified = context.trust {
            let result = SSL_get_verify_result(ssl)
            if result != X509_V_OK {
                ERR_clear_error()
                return .verification(verificationMessage(Int32(result)))
            }
        }
        if code == SSL_ERROR_ZERO_RETURN || (code == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
            ERR_clear_error()
            return .closed
        }
        return .handshake(TLSError.drainQueue(fallback: "error \(code)"))
    }

    private func verificationMessage(_ result: Int32) -> String {
        let reason = String(cString: X509_verify_cert_error_string(Int(result)))
        let host = hostName ?? "?"
        switch result {
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH:
            let names = (presented ?? fetchPeer())?.subjectAlternativeNames ?? []
            let listed = names.isEmpty ? "no names" : names.joined(separator: ", ")
            return "\(reason): the certificate names \(listed), not '\(host)'"
        case X509_V_ERR_CERT_HAS_EXPIRED:
            let date = (presented ?? fetchPeer())?.notAfter.map { " on \($0)" } ?? ""
            return "\(reason)\(date) (server '\(host)')"
        default:
            return "\(reason) (server '\(host)')"
        }
    }

    /// A pinned client compares the fingerprint and the validity dates (no chain checks them).
    private func checkPeer() throws(TLSError) {
        guard let peer = fetchPeer() else { throw .verification("the server sent no certificate") }
        guard case .pinned(let expected) = context.trust else { return }
        let actual = peer.fingerprint
        guard actual == expected else { throw .pinMismatch(expected: expected, actual: actual) }
        if X509_cmp_current_time(X509_get0_notAfter(peer.pointer)) < 0 {
            let date = peer.notAfter.map { " on \($0)" } ?? ""
            throw .verification("certificate has expired\(date) (server '\(hostName ?? "?")')")
        }
        if X509_cmp_current_time(X509_get0_notBefore(peer.pointer)) > 0 {
            throw .verification("certificate is not yet valid (server '\(hostName ?? "?")')")
        }
    }

    private func fetchPeer() -> TLSCertificate? {
        guard let raw = SSL_get1_peer_certificate(ssl) else { return nil }
        return TLSCertificate(owning: raw)
    }

    /// The peer's certificate (a client's view of its server), once the handshake has completed.
    public var peerCertificate: TLSCertificate? { established ? fetchPeer() : nil }

    /// The protocol ALPN settled on (`http/1.1`), nil when none was negotiated.
    public var negotiatedProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// `TLSv1.3` or `TLSv1.2`.
    public var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    // MARK: - Data

    /// Receives up to `buffer.count` bytes, waiting at most `timeout`; 0 means the peer closed.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration) throws(TLSError) -> Int {
        try receive(into: buffer, deadline: .after(timeout))
    }

    func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: HTTPDeadline) throws(TLSError) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        guard !broken else { throw .closed }
        while true {
            ERR_clear_error()
            var count = 0
            if SSL_read_ex(ssl, base, buffer.count, &count) == 1 {
                // One record is at most 16 KiB; what read-ahead already holds is taken too, without waiting, so a
                // caller reading a large body gets buffers as full as a plain recv would give (fewer, larger
                // writes downstream). A failure here is left for the next call to report.
                while count < buffer.count, SSL_has_pending(ssl) == 1 {
                    var more = 0
                    guard SSL_read_ex(ssl, base + count, buffer.count - count, &more) == 1 else {
                        ERR_clear_error()
                        break
                    }
                    count += more
                }
                return count
            }
            let code = SSL_get_error(ssl, 0)
            switch code {
            case SSL_ERROR_WANT_READ: try wait(Int16(POLLIN), deadline)
            case SSL_ERROR_WANT_WRITE: try wait(Int16(POLLOUT), deadline)
            case SSL_ERROR_ZERO_RETURN: return 0
            default:
                broken = true
                throw ioFailure(code)
            }
        }
    }

    /// Sends every byte; each wait for the peer to make room may last up to `timeout`.
    public func send(_ bytes: UnsafeRawBufferPointer, timeout: Duration) throws(TLSError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        guard !broken else { throw .closed }
        var offset = 0
        while offset < bytes.count {
            ERR_clear_error()
            var written = 0
            if SSL_write_ex(ssl, base + offset, bytes.count - offset, &written) == 1 {
                offset += written
                continue
            }
            let code = SSL_get_error(ssl, 0)
            switch code {
            case SSL_ERROR_WANT_WRITE: try wait(Int16(POLLOUT), .after(timeout))
            case SSL_ERROR_WANT_READ: try wait(Int16(POLLIN), .after(timeout))
            default:
                broken = true
                throw ioFailure(code)
            }
        }
    }

    public func send(_ bytes: [UInt8], timeout: Duration) throws(TLSError) {
        let outcome: Result<Void, TLSError> = bytes.withUnsafeBytes { raw in
            Result { () throws(TLSError) in try send(raw, timeout: timeout) }
        }
        try outcome.get()
    }

    private func ioFailure(_ code: Int32) -> TLSError {
        if code == SSL_ERROR_SYSCALL, ERR_peek_error() == 0 {
            // A reset or a closed descriptor (errno tells which; both end the connection).
            return .closed
        }
        return .failed(TLSError.drainQueue(fallback: "error \(code)"))
    }

    /// Non-blocking: true when the peer has closed (close_notify, FIN or reset). Pending application
    /// data counts as open; TLS records that carry none (tickets, key updates) are processed on the way.
    public func isPeerClosed() -> Bool {
        if broken { return true }
        if SSL_has_pending(ssl) == 1 { return false }
        var fds = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&fds, 1, 0)
        if ready < 0 { return errno != EINTR }
        if ready == 0 { return false }
        if fds.revents & Int16(POLLNVAL) != 0 { return true }
        ERR_clear_error()
        var byte: UInt8 = 0
        var count = 0
        if SSL_peek_ex(ssl, &byte, 1, &count) == 1 { return false }
        let code = SSL_get_error(ssl, 0)
        ERR_clear_error()
        switch code {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return false
        case SSL_ERROR_ZERO_RETURN: return true
        default:
            broken = true
            return true
        }
    }

    /// Sends close_notify if the connection is healthy, without waiting for the peer's (best effort,
    /// before the owner closes the descriptor).
    public func sendCloseNotify() {
        guard established, !broken, !closeNotifySent else { return }
        closeNotifySent = true
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    // MARK: - Waiting

    private func wait(_ events: Int16, _ deadline: HTTPDeadline) throws(TLSError) {
        switch DescriptorWait.until(deadline, descriptor: descriptor, events: events) {
        case .ready: return
        case .timedOut: throw .timeout
        case .failed(let code): throw .failed(String(cString: strerror(code)))
        }
    }

    /// Whether `host` is a numeric IPv4 or IPv6 address (without brackets).
    public static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// OpenSSL's verification callback of a `.verified` client: keeps the server's certificate on its stream
/// (the stream is the `SSL`'s app data) and leaves OpenSSL's verdict unchanged.
private func recordPresentedCertificate(_ verdict: Int32, _ store: OpaquePointer?) -> Int32 {
    guard let store,
        let raw = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
        let owner = SSL_get_ex_data(OpaquePointer(raw), 0)
    else { return verdict }
    let stream = Unmanaged<TLSStream>.fromOpaque(owner).takeUnretainedValue()
    if stream.presented == nil, let leaf = X509_STORE_CTX_get0_cert(store), X509_up_ref(leaf) == 1 {
        stream.presented = TLSCertificate(owning: leaf)
    }
    return verdict
}
