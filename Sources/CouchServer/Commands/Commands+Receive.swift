extension Commands {
    /// `couchlite receive [options]`: a photo drop with one-time credentials (see `ReceiveSession`).
    public static func receive(arguments: [String], environment: [String: String]) -> Int32 {
        let options: ReceiveOptions
        do {
            guard let parsed = try ReceiveOptions.parse(arguments: arguments, environment: environment) else {
                print(ReceiveOptions.usage)
                return 0
            }
            options = parsed
        } catch {
            printUsageError(String(describing: error), usage: ReceiveOptions.usage)
            return 64
        }
        return ReceiveSession(options: options).run()
    }
}
