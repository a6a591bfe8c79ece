import CouchWire
import Foundation

/// Who a request speaks for, as CouchDB's `#user_ctx`: `name` is nil for an anonymous request.
/// Names and roles are `ExactName`s: every access decision compares them by bytes.
struct UserContext: Sendable, Equatable {
    var name: ExactName?
    var roles: [ExactName]
    /// The handler that authenticated the request (`"cookie"` or `"default"` for Basic), as
    /// `GET /_session` reports it in `info.authenticated`; nil when anonymous.
    var handler: String?
    /// The one database this user may use, for a temporary account (`TemporaryAccounts`); nil otherwise.
    var scope: String? = nil

    static let anonymous = UserContext(name: nil, roles: [], handler: nil)

    /// The role every server admin carries.
    static let adminRole: ExactName = "_admin"

    var isServerAdmin: Bool { roles.contains(UserContext.adminRole) }

    /// `{"name":…,"roles":[…]}`, the `userCtx` of `GET /_session`.
    var json: JSON {
        .object(
            JSONObject([
                ("name", name.map { JSON.string($0.text) } ?? .null), ("roles", .array(roles.map { .string($0.text) })),
            ]))
    }
}

extension UserContext {
    /// The context of the request the current thread is handling.
    ///
    /// The engine runs each request start to finish on one connection thread, so a thread-local
    /// slot lets deep handlers (document writes, `_users` reads) see the caller without every
    /// signature carrying it. `App.handle` sets it before routing and clears it afterwards. The
    /// slot is a pthread key (a few nanoseconds), not `Thread.threadDictionary` (a Foundation
    /// dictionary lookup that showed up in read-heavy profiles).
    static var current: UserContext {
        get {
            guard let pointer = pthread_getspecific(threadKey) else { return .anonymous }
            return Unmanaged<Box>.fromOpaque(pointer).takeUnretainedValue().value
        }
        set {
            clearCurrent()
            pthread_setspecific(threadKey, Unmanaged.passRetained(Box(newValue)).toOpaque())
        }
    }

    static func clearCurrent() {
        guard let pointer = pthread_getspecific(threadKey) else { return }
        pthread_setspecific(threadKey, nil)
        Unmanaged<Box>.fromOpaque(pointer).release()
    }

    /// The thread-local slot; a thread that ends with a context set releases it in the destructor.
    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            Unmanaged<AnyObject>.fromOpaque(pointer).release()
        }
        return key
    }()

    /// A class wrapper so the struct can live behind a thread-local pointer.
    private final class Box {
        let value: UserContext
        init(_ value: UserContext) { self.value = value }
    }
}
