import CouchServer
import CouchWire
import Discovery
import Foundation
import PhotoDrop
import Replicator

extension Commands {
    /// Why `push --to NAME` did not get a URL, as its exit status (the message is printed already).
    struct PushToFailure: Error {
        let status: Int32
    }

    /// How long `push --to` listens for the drop at most, and at least once it is heard (so that a second
    /// announcer of the name has answered the same query too, and is seen).
    static let findSeconds = 4.0
    static let findAtLeastSeconds = 1.0

    /// `push --to NAME`: the code (from `--code` or the terminal), the drop of exactly that name on the LAN, and
    /// its one-time credentials traded for the code over HTTPS pinned to the certificate its announcement names.
    /// - Returns: the database URL with the credentials and the `#sha256=` pin, for the push.
    static func findDrop(named name: String, code given: String?, display: ProgressDisplay)
        -> Result<String, PushToFailure>
    {
        func fail(_ status: Int32, _ text: String) -> Result<String, PushToFailure> {
            display.message("couchlite push: \(text)")
            return .failure(PushToFailure(status: status))
        }
        let code: String
        if let given {
            code = given
        } else {
            guard isatty(STDIN_FILENO) == 1 else {
                return fail(64, "--to needs --code CODE when the standard input is not a terminal")
            }
            FileHandle.standardError.write(Data("code shown by the receiver \"\(name)\": ".utf8))
            guard let line = readLine(strippingNewline: true), !line.isEmpty else { return fail(64, "no code typed") }
            code = String(line.prefix(64))
        }
        let wanted = Array(name.utf8)
        let start = Browser.now()
        let peers: [Peer]
        do {
            peers = try Browser.browse(types: [ServiceDescription.photoDropType], seconds: findSeconds) { heard in
                Browser.now() - start >= findAtLeastSeconds
                    && heard.contains { Array($0.name.utf8) == wanted && $0.isResolved && !$0.txt.isEmpty }
            }
        } catch {
            return fail(69, "cannot listen on the LAN: \(error.description)")
        }
        let quoted = "\"\(name)\""
        switch DropLookup.choose(name: name, among: peers, isFingerprint: { TLSFingerprint(parsing: $0) != nil }) {
        case .none(let heard):
            let others =
                heard.isEmpty ? "no drop answered" : "heard: " + heard.map { "\"\($0)\"" }.joined(separator: ", ")
            return fail(68, "no drop named \(quoted) on the LAN within \(Int(findSeconds)) s (\(others))")
        case .several(let matches):
            let places = matches.flatMap { $0.addresses }.map { $0.map(String.init).joined(separator: ".") }
            return fail(
                65,
                "more than one announcement claims the name \(quoted)"
                    + (places.isEmpty ? "" : " (at \(places.joined(separator: ", ")))")
                    + ": not sending; give the URL the receiver shows instead")
        case .unresolved:
            return fail(69, "the drop \(quoted) was heard but did not give its address in time; try again")
        case .noCertificate:
            return fail(
                76,
                "the drop \(quoted) announces no TLS certificate to pin: not sending the code in clear; "
                    + "start the receiver with --tls auto, or give the URL it shows")
        case .found(_, let url, let hex):
            return trade(code: code, url: url, fingerprint: hex, name: quoted, display: display, fail: fail)
        }
    }

    /// `POST /_photos/api/pair` with the code, over HTTPS pinned to `fingerprint`: a server presenting any other
    /// certificate never sees the code.
    private static func trade(
        code: String, url: String, fingerprint hex: String, name: String, display: ProgressDisplay,
        fail: (Int32, String) -> Result<String, PushToFailure>
    ) -> Result<String, PushToFailure> {
        guard let pin = TLSFingerprint(parsing: hex), let parts = URLComponents(string: url), let host = parts.host,
            let port = parts.port
        else { return fail(1, "the announcement of \(name) is not usable: \(url)") }
        let origin = "https://\(host):\(port)"
        display.message("push: found \(name) at \(url) (certificate SHA-256 \(pin.colonHex), as announced)")
        let answer: JSON
        do {
            let endpoint = try Endpoint.remote(url: origin + "/_photos", trust: PeerTrust(pin: pin))
            var headers = HTTPHeaders()
            headers.add("Accept", "application/json")
            headers.add("User-Agent", "couchlite-push/1")
            headers.add(PairingRoutes.header, code)
            let response = try endpoint.client.send(
                ClientRequest(method: "POST", target: "/_photos/api/pair", headers: headers, timeout: .seconds(30)))
            let body = try? response.json(limit: 64 * 1024)
            let reason = body?["reason"]?.stringValue.map { printable($0) } ?? "HTTP \(response.status)"
            switch response.status {
            case 200: answer = body ?? .null
            case 401, 403: return fail(77, "the drop \(name) refused the code: \(reason)")
            case 404: return fail(1, "the drop \(name) does not take codes (an older couchlite?): give its URL instead")
            default: return fail(1, "the drop \(name) answered the code with \(reason)")
            }
        } catch .certificateRejected(_, let detail) {
            return fail(
                76,
                "the drop \(name) presented a certificate that is not the one it announced "
                    + "(\(pin.colonHex)): not sending; \(printable(detail))")
        } catch {
            return fail(Commands.exitStatus(error), "cannot reach the drop \(name): \(error.description)")
        }
        guard let user = answer["user"]?.stringValue, let password = answer["password"]?.stringValue,
            isCredential(user), isCredential(password)
        else { return fail(1, "the drop \(name) answered the code with no usable credentials") }
        return .success(
            origin.replacingOccurrences(of: "https://", with: "https://\(user):\(password)@")
                + String(url.dropFirst(origin.count)) + "#sha256=\(pin.hex)")
    }

    /// One-time names and passwords are `drop-` and hex: anything else from a peer is not put into a URL.
    private static func isCredential(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return !bytes.isEmpty && bytes.count <= 128
            && bytes.allSatisfy { $0 == UInt8(ascii: "-") || ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7A) }
    }

    /// A peer's text for the terminal: no control characters, at most 200 characters.
    private static func printable(_ text: String) -> String {
        String(
            String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }).prefix(200))
    }
}
