extension Duration {
    /// The duration in seconds, as a `Double` (timings, logs, metrics, timers).
    package var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
