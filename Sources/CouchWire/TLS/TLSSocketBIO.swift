import COpenSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// OpenSSL's transport for a connected, non-blocking socket, written here rather than `SSL_set_fd` because
/// OpenSSL's socket BIO writes with `write()`, which raises SIGPIPE on a closed peer; this one sends with
/// `MSG_NOSIGNAL`. It neither owns nor closes the descriptor (its socket's owner does).
enum TLSSocketBIO {
    /// The method table, made once. `nonisolated(unsafe)`: written only by the lazy initializer.
    nonisolated(unsafe) private static let method: OpaquePointer? = makeMethod()

    /// A new BIO over `descriptor`; nil only when OpenSSL is out of memory.
    static func make(descriptor: Int32) -> OpaquePointer? {
        guard let method, let bio = BIO_new(method) else { return nil }
        // The descriptor rides in the data pointer, offset by one so that descriptor 0 is not a null pointer.
        BIO_set_data(bio, UnsafeMutableRawPointer(bitPattern: Int(descriptor) + 1))
        BIO_set_init(bio, 1)
        return bio
    }

    private static func descriptor(_ bio: OpaquePointer?) -> Int32 {
        Int32(truncatingIfNeeded: Int(bitPattern: BIO_get_data(bio)) - 1)
    }

    private static func makeMethod() -> OpaquePointer? {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "couchlite socket") else {
            return nil
        }
        _ = BIO_meth_set_write_ex(method) { bio, data, count, written in
            couchlite_bio_clear_retry(bio)
            written?.pointee = 0
            guard let data, count > 0 else { return 1 }
            while true {
                let sent = send(TLSSocketBIO.descriptor(bio), data, count, Int32(MSG_NOSIGNAL))
                if sent >= 0 {
                    written?.pointee = sent
                    return 1
                }
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { couchlite_bio_set_retry_write(bio) }
                return 0
            }
        }
        _ = BIO_meth_set_read_ex(method) { bio, data, count, read in
            couchlite_bio_clear_retry(bio)
            read?.pointee = 0
            guard let data, count > 0 else { return 0 }
            while true {
                let received = recv(TLSSocketBIO.descriptor(bio), data, count, 0)
                if received > 0 {
                    read?.pointee = received
                    return 1
                }
                if received == 0 { return 0 }
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { couchlite_bio_set_retry_read(bio) }
                return 0
            }
        }
        _ = BIO_meth_set_ctrl(method) { _, command, _, _ in
            // Nothing is buffered here: a flush always succeeds; every other control is unsupported.
            command == BIO_CTRL_FLUSH ? 1 : 0
        }
        return method
    }
}
