import Testing

extension Trait where Self == TimeLimitTrait {
    /// Every suite's bound on each of its tests (each case of a parameterized one): a test that
    /// hangs is named as it passes the bound, instead of the run going silent until CI's limit.
    /// The longest case takes about two minutes here; machines up to three times slower fit.
    static var bounded: Self { .timeLimit(.minutes(12)) }
}
