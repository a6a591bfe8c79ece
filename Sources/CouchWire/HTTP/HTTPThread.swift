#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Starts detached POSIX threads with an explicit, small stack (`HTTPLimits.threadStackBytes`).
enum HTTPThread {
    /// Holds the body while it crosses into the new thread; handed over exactly once, so never shared.
    private final class Start {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Runs `body` on a new detached thread.
    /// - Returns: false when the system refused to create a thread (e.g. out of memory or thread limit).
    static func spawn(_ body: @escaping () -> Void) -> Bool {
        // Allocated rather than `pthread_attr_t()`, whose zero initializer is not visible from Glibc alone.
        let attributes = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
        pthread_attr_init(attributes)
        defer {
            pthread_attr_destroy(attributes)
            attributes.deallocate()
        }
        pthread_attr_setstacksize(attributes, HTTPLimits.threadStackBytes)
        pthread_attr_setdetachstate(attributes, Int32(PTHREAD_CREATE_DETACHED))
        let context = Unmanaged.passRetained(Start(body)).toOpaque()
        var thread: pthread_t = 0
        let result = pthread_create(
            &thread, attributes,
            { raw in
                guard let raw else { return nil }
                let start = Unmanaged<Start>.fromOpaque(raw).takeRetainedValue()
                start.body()
                return nil
            }, context)
        if result != 0 {
            Unmanaged<Start>.fromOpaque(context).release()
            return false
        }
        return true
    }
}
