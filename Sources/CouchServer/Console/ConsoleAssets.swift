/// The database console's page, style and script, compiled into the binary as the gallery's are: real files in
/// `Assets/`, embedded by SwiftPM as byte arrays (`PackageResources`, from `.embedInCode` in Package.swift) and
/// served as they are. The script builds every element with DOM calls and `textContent`, so no data ever goes
/// through HTML parsing, and the CSP forbids inline script and style anyway.
enum ConsoleAssets {
    struct Asset {
        let contentType: String
        let bytes: [UInt8]
    }

    /// `GET /_utils/NAME` (`/_utils/` is `index.html`).
    static let files: [String: Asset] = [
        "index.html": Asset(contentType: "text/html; charset=utf-8", bytes: PackageResources.console_html),
        "console.css": Asset(contentType: "text/css; charset=utf-8", bytes: PackageResources.console_css),
        "console.js": Asset(contentType: "text/javascript; charset=utf-8", bytes: PackageResources.console_js),
    ]

    /// Nothing but this server's own files, no inline script or style, no frames, no forms posted elsewhere: what
    /// the console shows of a database (ids, bodies, errors) can never become code.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}
