import COpenSSL

extension TLSCertificate {
    /// A self-signed server certificate for `key`, made with OpenSSL's API (no `openssl` command).
    ///
    /// X.509 v3 with a random 128-bit serial, valid from one hour ago (clocks disagree) for `validityDays`;
    /// subject and issuer `CN=commonName`; `subjectAltName` with every DNS name and IP address given (what
    /// clients match the host against); `basicConstraints` critical `CA:FALSE` (browsers refuse a CA
    /// certificate used as a server's), `keyUsage` critical `digitalSignature`, `extendedKeyUsage`
    /// `serverAuth` and a subject key identifier; signed with ECDSA/RSA and SHA-256. At most 825 days keeps
    /// it acceptable to Apple's clients.
    /// - Throws: `.configuration` naming the step OpenSSL refused.
    public static func selfSigned(
        key: TLSPrivateKey, commonName: String, dnsNames: [String], ipAddresses: [String], validityDays: Int
    ) throws(TLSError) -> TLSCertificate {
        ERR_clear_error()
        guard let raw = X509_new() else { throw .configuration("cannot allocate a certificate") }
        let certificate = TLSCertificate(owning: raw)
        let x509 = certificate.pointer
        func require(_ ok: Bool, _ step: String) throws(TLSError) {
            if !ok { throw .configuration("\(step): \(TLSError.drainQueue(fallback: "refused"))") }
        }
        try require(X509_set_version(x509, 2) == 1, "version")
        try require(setRandomSerial(x509), "serial number")
        try require(X509_gmtime_adj(X509_getm_notBefore(x509), -3600) != nil, "notBefore")
        try require(
            X509_time_adj_ex(X509_getm_notAfter(x509), Int32(clamping: validityDays), 0, nil) != nil, "notAfter")
        try require(X509_set_pubkey(x509, key.pointer) == 1, "public key")
        guard let name = X509_get_subject_name(x509) else { throw .configuration("subject name") }
        try require(couchlite_x509_name_add_text(name, "CN", String(commonName.prefix(64))) == 1, "common name")
        try require(X509_set_issuer_name(x509, name) == 1, "issuer name")

        let alternatives = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }
        var extensions = [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_key_usage, "critical,digitalSignature"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
        ]
        if !alternatives.isEmpty { extensions.append((NID_subject_alt_name, alternatives.joined(separator: ","))) }
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, x509, x509, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw .configuration("extension \(value): \(TLSError.drainQueue(fallback: "refused"))")
            }
            defer { X509_EXTENSION_free(ext) }
            try require(X509_add_ext(x509, ext, -1) == 1, "extension \(value)")
        }
        try require(X509_sign(x509, key.pointer, EVP_sha256()) > 0, "signature")
        return certificate
    }

    private static func setRandomSerial(_ x509: OpaquePointer) -> Bool {
        guard let number = BN_new() else { return false }
        defer { BN_free(number) }
        // 127 random bits with the top one clear: a positive serial of at most 16 bytes (RFC 5280 §4.1.2.2).
        guard BN_rand(number, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1,
            let serial = X509_get_serialNumber(x509)
        else { return false }
        return BN_to_ASN1_INTEGER(number, serial) != nil
    }
}
