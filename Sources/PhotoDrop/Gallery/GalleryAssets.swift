import CouchServer

/// The gallery's page, style, script and images, compiled into the binary (no build step, no CDN, no
/// files to find at run time): they are real files in `Assets/`, embedded by SwiftPM as byte arrays
/// (`PackageResources`, from `.embedInCode` in Package.swift) and served as they are. The script
/// builds every element with DOM calls and `textContent`: no data ever goes through HTML parsing, and
/// the CSP forbids inline script anyway.
enum GalleryAssets {
    struct Asset {
        let contentType: String
        let bytes: [UInt8]
    }

    /// `GET /_photos/NAME`.
    static let files: [String: Asset] = [
        "index.html": Asset(contentType: "text/html; charset=utf-8", bytes: PackageResources.index_html),
        "app.css": Asset(contentType: "text/css; charset=utf-8", bytes: PackageResources.app_css),
        "app.js": Asset(contentType: "text/javascript; charset=utf-8", bytes: PackageResources.app_js),
        "icon.svg": Asset(contentType: "image/svg+xml", bytes: PackageResources.icon_svg),
    ]

    /// `GET /` for a browser.
    static let welcome: [UInt8] = PackageResources.welcome_html

    /// The thumbnail of a photo that cannot be decoded.
    static let placeholder: [UInt8] = PackageResources.placeholder_svg
}
