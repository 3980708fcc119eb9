/// Drives the controller's scan for every subscriber of `Central.scan` (placeholder).
actor Scanner {
    nonisolated let executor: AdapterExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    let host: HCIHost
    let scheduler: any TimerScheduler
    let logger: Logger
    var isScanning = false

    init(host: HCIHost, scheduler: any TimerScheduler, logger: Logger) {
        self.executor = host.executor
        self.host = host
        self.scheduler = scheduler
        self.logger = logger
    }

    func configure(info: ControllerInfo) {}
    func handle(_ event: HCIEvent) -> Bool { false }
    func pause() async {}
    func resume() async {}
    func stopAll(error: (any Error)?) async {}
    func transportLost(_ why: String) {}
}
