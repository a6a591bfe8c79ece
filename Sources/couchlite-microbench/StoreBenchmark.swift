enum StoreBenchmark { static func run() {} }
