import CouchWire
import Foundation

/// The HTTPS identity of `--tls auto`: an EC P-256 key and a self-signed certificate kept in the data dir
/// (`tls-key.pem`, `tls-cert.pem`, owner-only), made on first start and reused afterwards, so a peer that
/// pinned the fingerprint keeps trusting the server across restarts.
///
/// A new pair is made when either file is missing or unreadable, they do not belong together, or fewer
/// than `renewalDays` of validity remain. Names are fixed when the certificate is made: the machine's
/// host name (and `NAME.local`), `localhost`, `127.0.0.1`, `::1`, the LAN addresses and the bound
/// address. An address that appears later is not added (a pinning client does not need it; a new
/// certificate would change the fingerprint peers have pinned).
package enum TLSIdentity {
    package static let certificateName = "tls-cert.pem"
    static let keyName = "tls-key.pem"
    /// Validity of a new certificate, in days (Apple's clients refuse server certificates over 825).
    static let validityDays = 825
    /// Remaining validity under which the certificate is renewed at start, in days.
    static let renewalDays = 30

    /// The identity the server uses, and whether it was just made.
    package struct Loaded {
        let certificate: TLSCertificate
        let key: TLSPrivateKey
        let generated: Bool
        /// Why the previous pair was replaced (nil when none existed or it was reused).
        package let replacedBecause: String?
    }

    /// Reads the pair in `dataDir`, or makes (and stores) a new one.
    static func loadOrCreate(dataDir: String, bind: String, now: Date = Date()) throws -> Loaded {
        let certificatePath = dataDir + "/" + certificateName
        let keyPath = dataDir + "/" + keyName
        let existing =
            FileManager.default.fileExists(atPath: certificatePath)
            || FileManager.default.fileExists(atPath: keyPath)
        var reason: String?
        do throws(TLSError) {
            let certificate = try TLSCertificate(pemFile: certificatePath)
            let key = try TLSPrivateKey(pemFile: keyPath)
            if !certificate.matches(key) {
                reason = "the key does not match the certificate"
            } else if let notAfter = certificate.notAfter,
                notAfter.timeIntervalSince(now) >= Double(renewalDays) * 86_400
            {
                // Files copied in by hand may be readable by others: narrow them as the server would make them.
                for path in [certificatePath, keyPath] { chmod(path, PrivateFile.fileMode) }
                return Loaded(certificate: certificate, key: key, generated: false, replacedBecause: nil)
            } else {
                reason = "it expires within \(renewalDays) days"
            }
        } catch {
            reason = existing ? error.description : nil
        }
        let key = try TLSPrivateKey.generateP256()
        let names = subjectNames(bind: bind)
        let certificate = try TLSCertificate.selfSigned(
            key: key, commonName: names.dns.first ?? "couchlite", dnsNames: names.dns, ipAddresses: names.ip,
            validityDays: validityDays)
        // Key first: a crash between the two leaves a mismatched pair, which the next start replaces.
        try PrivateFile.write(key.pem, to: keyPath)
        try PrivateFile.write(certificate.pem, to: certificatePath)
        return Loaded(certificate: certificate, key: key, generated: true, replacedBecause: reason)
    }

    /// The DNS names and IP addresses a new certificate carries.
    static func subjectNames(bind: String) -> (dns: [String], ip: [String]) {
        var dns: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        if gethostname(&buffer, buffer.count) == 0 {
            let host = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if isDNSName(host) {
                dns.append(host)
                if !host.contains(".") { dns.append(host + ".local") }
            }
        }
        dns.append("localhost")
        var ip = ["127.0.0.1", "::1"] + LANAddresses.candidates().map(\.address)
        let bare = bind.hasPrefix("[") && bind.hasSuffix("]") ? String(bind.dropFirst().dropLast()) : bind
        if TLSStream.isIPAddress(bare), bare != "0.0.0.0", bare != "::" { ip.append(bare) }
        var seen = Set<String>()
        return (dns.filter { seen.insert($0.lowercased()).inserted }, ip.filter { seen.insert($0).inserted })
    }

    /// Letters, digits, hyphens and dots only, as a certificate's DNS name must be.
    private static func isDNSName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 253
            && name.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x2E
            }
    }
}
