import BLECore
import BLETestSupport
import Dispatch
import Foundation
import GATTClient
import BLEWire
import GATTServer

/// Memory: resident bytes per connection with a discovered 50-attribute database, and heap
/// allocations per delivered notification (counted by an LD_PRELOAD malloc counter).
enum MemoryWorkload {
    /// GAP and GATT services plus three services of four readable, notifying characteristics
    /// (declaration, value, CCCD): about 50 attributes (the exact count is reported).
    static func database() -> GATTDatabase {
        func u(_ s: UInt16) -> BluetoothUUID { BluetoothUUID(uuid16: s) }
        var services: [GATTDatabase.Service] = []
        for s in 0..<3 {
            var characteristics: [GATTDatabase.Characteristic] = []
            for c in 0..<4 {
                let uuid = u(0xFE00 + UInt16(s * 16 + c))
                characteristics.append(GATTDatabase.Characteristic(uuid: uuid, properties: [.read, .notify], value: [UInt8(c)]))
            }
            services.append(GATTDatabase.Service(uuid: u(0xFF00 + UInt16(s)), characteristics: characteristics))
        }
        return GATTDatabase(services: services, deviceName: "bench", appearance: 0)
    }

    static func perConnection(links count: Int) async throws -> Measurement {
        let stack = BenchStack(peripherals: count, database: database())
        try await stack.central.powerOn()
        // One link first so lazily created state of the runtime is not charged to the rest.
        func open(_ i: Int) async throws -> (Connection, Peripheral, Int) {
            let connection = try await stack.central.connect(BenchStack.address(i), timeout: .seconds(5))
            let p = try await Peripheral(connection: connection)
            var attributes = 0
            for s in try await p.services() {
                attributes += 1
                for c in try await p.characteristics(of: s) { attributes += 2 + (try await p.descriptors(of: c)).count }
            }
            return (connection, p, attributes)
        }
        var kept: [(Connection, Peripheral)] = []
        let (c0, p0, attributes) = try await open(0)
        kept.append((c0, p0))
        let before = residentBytes()
        for i in 1..<count {
            let (c, p, _) = try await open(i)
            kept.append((c, p))
        }
        let after = residentBytes()
        var m = Measurement(name: "memory: resident bytes per connection (discovered database)", operations: count - 1, seconds: 0, operationsPerSecond: 0)
        m.extra = ["bytesPerConnection": Double(after - before) / Double(count - 1), "attributes": Double(attributes)]
        withExtendedLifetime(kept) {}
        await stack.close()
        return m
    }

    /// The C source of the malloc counter loaded with LD_PRELOAD.
    static let counterSource = """
    #define _GNU_SOURCE
    #include <errno.h>
    #include <stddef.h>
    extern void *__libc_malloc(size_t);
    extern void *__libc_calloc(size_t, size_t);
    extern void *__libc_realloc(void *, size_t);
    extern void *__libc_memalign(size_t, size_t);
    static long counter;
    long ble_bench_allocations(void) { return __atomic_load_n(&counter, __ATOMIC_RELAXED); }
    static inline void count(void) { __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED); }
    void *malloc(size_t n) { count(); return __libc_malloc(n); }
    void *calloc(size_t a, size_t b) { count(); return __libc_calloc(a, b); }
    void *realloc(void *p, size_t n) { count(); return __libc_realloc(p, n); }
    void *memalign(size_t a, size_t n) { count(); return __libc_memalign(a, n); }
    void *aligned_alloc(size_t a, size_t n) { count(); return __libc_memalign(a, n); }
    int posix_memalign(void **out, size_t a, size_t n) {
        count();
        void *p = __libc_memalign(a, n);
        if (!p) return ENOMEM;
        *out = p;
        return 0;
    }
    """

    /// Builds the counter with the system C compiler; nil when there is none.
    static func buildCounter(in directory: URL) -> String? {
        let source = directory.appendingPathComponent("malloc_counter.c")
        let library = directory.appendingPathComponent("malloc_counter.so")
        guard (try? counterSource.write(to: source, atomically: true, encoding: .utf8)) != nil else { return nil }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["cc", "-O2", "-shared", "-fPIC", "-o", library.path, source.path]
        guard (try? p.run()) != nil else { return nil }
        p.waitUntilExit()
        return p.terminationStatus == 0 ? library.path : nil
    }

    /// The counter, when this process runs with it preloaded.
    static func allocationCounter() -> (@convention(c) () -> Int)? {
        guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "ble_bench_allocations") else { return nil }
        return unsafeBitCast(sym, to: (@convention(c) () -> Int).self)
    }

    /// Heap allocations per notification delivered to one subscriber (in this process, which
    /// must run with the counter preloaded). Counts every thread, so it is an upper bound.
    /// Returns (routed with no subscriber, delivered to one subscriber).
    static func allocationsPerNotification(_ counter: @convention(c) () -> Int, notifications n: Int) async throws -> (Double, Double) {
        let stack = try await BenchStack.make(links: 1)
        let link = stack.links[0]
        let rounds = 1000
        let bytes = NotifyWorkload.batch([link], rounds: rounds)
        _ = try await link.peripheral.subscribe(to: link.measurement) // dropped: the route stays, empty
        stack.queue.sync {}
        let routedBefore = counter()
        stack.queue.sync { bytes.withUnsafeBytes { raw in for _ in 0..<(n / rounds) { stack.tap.feed(raw) } } }
        let routed = Double(counter() - routedBefore) / Double(n)
        let stream = try await link.peripheral.subscribe(to: link.measurement, bufferingPolicy: .unbounded)
        let warmup = NotifyWorkload.batch([link], rounds: rounds, marker: 0x00)
        let tap = stack.tap
        let consumer = Task.detached { () -> Int in
            var seen = 0, warm = 0
            for try await v in stream {
                if v.first == 0x00 { warm += 1; continue }
                seen += 1
                if seen == n { break }
            }
            return seen
        }
        stack.queue.sync { warmup.withUnsafeBytes { tap.feed($0) } }
        try await Task.sleep(for: .milliseconds(200))
        let before = counter()
        for _ in 0..<(n / rounds) { stack.queue.async { bytes.withUnsafeBytes { tap.feed($0) } } }
        let seen = try await consumer.value
        let after = counter()
        guard seen == n else { throw BenchError("allocations: delivered \(seen) of \(n)") }
        await stack.close()
        return (routed, Double(after - before) / Double(n))
    }
}
