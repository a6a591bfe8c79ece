/// Lets the local server's handler reach the app that owns it.
///
/// `@unchecked Sendable`: `app` is written once, in `App.init`, before the local server can accept its first
/// connection (nothing calls `connect()` until `init` has returned), and only read afterwards.
final class AppBox: @unchecked Sendable {
    weak var app: App?
}
