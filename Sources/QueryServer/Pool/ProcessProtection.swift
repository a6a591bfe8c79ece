import CProcess

/// What the server does to itself so its workers cannot reach it.
public enum ProcessProtection {
    /// Makes this process one that no other process of its user (a worker a hostile file took over included) can
    /// attach to, read the memory or environment of, or make dump core. False when the kernel refused.
    @discardableResult
    public static func refuseAttaching() -> Bool {
        couchlite_refuse_attach() == 0
    }
}
