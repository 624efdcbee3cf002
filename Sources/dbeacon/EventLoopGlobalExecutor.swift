import Foundation
import NIOCore
import NIOPosix

/// Runs Swift Concurrency's global jobs on the server's event loops (`--executor event-loops`),
/// as jobs of the *generic* executor.
///
/// NIO's own take-over (`NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor`)
/// runs each job as a job of its event loop's serial executor. The runtime then sees every
/// nonisolated async function it enters as a change of executor, and enqueues the task again:
/// 30 trips through an event loop's queue for a `GET /healthz`, some 80 for a location fix (1 and 3.5 as generic jobs). Run as
/// generic jobs, a task goes on inline until it really changes isolation (an actor, the store's
/// threads, a resumed continuation).
///
/// Like NIO's, this sets the runtime's `swift_task_enqueueGlobal_hook`: call it once, before any
/// task starts. Jobs go to the event loop the caller runs on, or to the next one.
enum EventLoopGlobalExecutor {
    private typealias EnqueueGlobalHook = @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void

    /// Whether the hook was installed (false where the runtime has none, or one is set).
    static func install() -> Bool {
        guard let slot = dlsym(dlopen(nil, RTLD_NOW), "swift_task_enqueueGlobal_hook")?
            .assumingMemoryBound(to: UnsafeRawPointer?.self), slot.pointee == nil else { return false }
        // (The shape NIO's take-over uses: the compiler forms a thin function only from a closure
        // literal, and only this way round.)
        return withUnsafeTemporaryAllocation(of: EnqueueGlobalHook.self, capacity: 1) { storage -> Bool in
            storage.baseAddress!.initialize(to: { job, _ in EventLoopGlobalExecutor.enqueue(job) })
            return storage.baseAddress!.withMemoryRebound(to: UnsafeRawPointer.self, capacity: 1) { hook -> Bool in
                let installed = hook.pointee
                slot.pointee = installed
                return true
            }
        }
    }

    /// Runs `job` on the event loop the caller runs on, or on the next one.
    private static func enqueue(_ job: UnownedJob) {
        MultiThreadedEventLoopGroup.singleton.any().execute { job.runSynchronously(on: genericExecutor) }
    }

    /// The runtime's generic executor (`SerialExecutorRef::generic()`: no identity, no witness
    /// table), the one Swift's own global executor runs jobs on. `UnownedSerialExecutor` is a
    /// frozen pair of words; Swift offers no spelling for this value.
    private static let genericExecutor = unsafeBitCast((0, 0), to: UnownedSerialExecutor.self)
}

