import CouchServer
import CouchWire

/// The gallery's defences (`PageGuard`'s): its strict Content-Security-Policy, and the same-origin check of every
/// request that changes something.
enum GalleryGuard {
    /// No inline script or style, nothing from elsewhere: data rendered into the page can never
    /// become code, even if an escape were missed.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; media-src 'self'; "
        + "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    static func pageHeaders(contentType: String) -> HTTPHeaders {
        PageGuard.headers(contentType: contentType, policy: contentSecurityPolicy)
    }

    /// `PageGuard.requireSameOrigin`.
    static func requireSameOrigin(_ head: HTTPRequestHead, servedBy hosts: HostPolicy) throws(CouchError) {
        try PageGuard.requireSameOrigin(head, servedBy: hosts)
    }
}
