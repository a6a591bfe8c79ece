enum JSONBenchmark { static func run() {} }
