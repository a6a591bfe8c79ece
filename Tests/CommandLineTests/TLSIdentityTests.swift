import CouchWire
import Foundation
import Testing

@testable import CouchServer
@testable import PhotoDrop
@testable import couchlite

@Suite struct TLSIdentityTests {
    private func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "couchlite-tls-identity-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func firstStartGeneratesAndLaterStartsReuse() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try TLSIdentity.loadOrCreate(dataDir: directory, bind: "127.0.0.1")
        #expect(first.generated && first.replacedBecause == nil)
        let second = try TLSIdentity.loadOrCreate(dataDir: directory, bind: "127.0.0.1")
        #expect(!second.generated)
        #expect(second.certificate.fingerprint == first.certificate.fingerprint)
        for name in [TLSIdentity.certificateName, TLSIdentity.keyName] {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + name)
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(name)")
        }
        let names = first.certificate.subjectAlternativeNames
        #expect(names.contains("localhost") && names.contains("127.0.0.1") && names.contains("::1"))
    }

    @Test func nearExpiryIsRenewed() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try TLSIdentity.loadOrCreate(dataDir: directory, bind: "127.0.0.1")
        // 800 days on, 25 of the 825 remain: fewer than 30.
        let later = Date().addingTimeInterval(800 * 86_400)
        let renewed = try TLSIdentity.loadOrCreate(dataDir: directory, bind: "127.0.0.1", now: later)
        #expect(renewed.generated)
        #expect(renewed.replacedBecause?.contains("expires within 30 days") == true)
        #expect(renewed.certificate.fingerprint != first.certificate.fingerprint)
        // 790 days on, 35 remain: kept.
        let kept = try TLSIdentity.loadOrCreate(
            dataDir: directory, bind: "127.0.0.1", now: Date().addingTimeInterval(790 * 86_400))
        #expect(!kept.generated)
    }

    @Test func mismatchedOrGarbledFilesAreReplaced() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try TLSIdentity.loadOrCreate(dataDir: directory, bind: "127.0.0.1")
        let foreignKey = try TLSPrivateKey.generateP256()
        try Data(foreignKey.pem).write(to: URL(fileURLWithPath: directory + "/" + TLSIdentity.keyName))
        let replaced = try TLSIdentity.loadOrCreate(dataDir: directory, bind: "127.0.0.1")
        #expect(replaced.generated && replaced.replacedBecause == "the key does not match the certificate")
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: directory + "/" + TLSIdentity.certificateName))
        let again = try TLSIdentity.loadOrCreate(dataDir: directory, bind: "127.0.0.1")
        #expect(again.generated && again.replacedBecause != nil)
        #expect(again.certificate.matches(try TLSPrivateKey(pemFile: directory + "/" + TLSIdentity.keyName)))
    }

    @Test func boundAddressIsNamedButWildcardsAreNot() {
        #expect(TLSIdentity.subjectNames(bind: "10.9.8.7").ip.contains("10.9.8.7"))
        #expect(TLSIdentity.subjectNames(bind: "[fd00::9]").ip.contains("fd00::9"))
        #expect(!TLSIdentity.subjectNames(bind: "0.0.0.0").ip.contains("0.0.0.0"))
        #expect(!TLSIdentity.subjectNames(bind: "::").ip.contains("::"))
    }
}

@Suite struct TLSOptionsTests {
    private func parse(_ arguments: [String], _ environment: [String: String] = [:]) throws -> Options? {
        try Options.parse(arguments: arguments, environment: environment)
    }

    @Test func defaultsAreOffWithPort6984() throws {
        let options = try #require(try parse([]))
        #expect(options.tls == .off && options.tlsPort == 6984 && options.port == 5984)
        #expect(options.headerTimeoutSeconds == 30)
    }

    @Test func autoFilesPortsAndEnvironment() throws {
        let auto = try #require(try parse(["--tls", "auto", "--port", "off", "--tls-port", "0"]))
        #expect(auto.tls == .auto && auto.port == nil && auto.tlsPort == 0)
        let files = try #require(try parse(["--tls-key", "/k.pem", "--tls-cert=/c.pem"]))
        #expect(files.tls == .files(certificate: "/c.pem", key: "/k.pem"))
        let environment = try #require(try parse([], ["COUCHLITE_TLS": "auto", "COUCHLITE_TLS_PORT": "7443"]))
        #expect(environment.tls == .auto && environment.tlsPort == 7443)
        let overridden = try #require(try parse(["--tls", "off"], ["COUCHLITE_TLS": "auto"]))
        #expect(overridden.tls == .off)
    }

    @Test(arguments: [
        ["--tls", "yes"], ["--tls-cert", "/c.pem"], ["--tls-key", "/k.pem"], ["--port", "off"],
        ["--tls", "auto", "--tls-port", "-1"], ["--tls-cert", ""], ["--header-timeout", "0"],
    ])
    func badCombinationsAreRefused(arguments: [String]) {
        #expect(throws: OptionsError.self) { _ = try parse(arguments) }
    }

    @Test func receiveQRPinNeedsTLS() throws {
        #expect(throws: OptionsError.self) { _ = try ReceiveOptions.parse(arguments: ["--qr-pin"], environment: [:]) }
        let options = try #require(
            try ReceiveOptions.parse(arguments: ["--qr-pin", "--tls", "auto"], environment: [:]))
        #expect(options.qrPin && options.server.tls == .auto)
    }
}
