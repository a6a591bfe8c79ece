import CouchWire
import Foundation

/// Who a request speaks for, as CouchDB's `#user_ctx`: `name` is nil for an anonymous request.
struct UserContext: Sendable, Equatable {
    var name: String?
    var roles: [String]
    /// The handler that authenticated the request (`"cookie"` or `"default"` for Basic), as
    /// `GET /_session` reports it in `info.authenticated`; nil when anonymous.
    var handler: String?

    static let anonymous = UserContext(name: nil, roles: [], handler: nil)

    /// The role every server admin carries.
    static let adminRole = "_admin"

    var isServerAdmin: Bool { roles.contains(UserContext.adminRole) }

    /// `{"name":…,"roles":[…]}`, the `userCtx` of `GET /_session`.
    var json: JSON {
        .object(JSONObject([("name", name.map(JSON.string) ?? .null), ("roles", .array(roles.map(JSON.string)))]))
    }
}

extension UserContext {
    /// The context of the request the current thread is handling.
    ///
    /// The engine runs each request start to finish on one connection thread, so a thread-local
    /// slot lets deep handlers (document writes, `_users` reads) see the caller without every
    /// signature carrying it. `App.handle` sets it before routing and clears it afterwards.
    static var current: UserContext {
        get { (Thread.current.threadDictionary[threadKey] as? Box)?.value ?? .anonymous }
        set { Thread.current.threadDictionary[threadKey] = Box(newValue) }
    }

    static func clearCurrent() {
        Thread.current.threadDictionary.removeObject(forKey: threadKey)
    }

    private static let threadKey = "couchlite.userContext"

    /// A class wrapper so the struct can live in an `NSMutableDictionary`.
    private final class Box {
        let value: UserContext
        init(_ value: UserContext) { self.value = value }
    }
}
