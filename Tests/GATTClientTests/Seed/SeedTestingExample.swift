// The testing example of the seed post ("Testing without hardware"), as written there except
// for the import lines and the queue line (Linux has no DispatchSerialQueue; the adapter
// executor is the serial queue a central runs on).
import BLEHost
import BLETestSupport

func seedTestingExample() -> (FakeCentral, Central) {
let queue = AdapterExecutor(label: "MyAppTests.rig")
let fakeCentral = FakeCentral(queue: queue)
let central = Central(backend: fakeCentral, queue: queue)

fakeCentral.simulateStateChange(.poweredOn)
// Script discoveries, connections, reads, writes, and notifications from here.
return (fakeCentral, central)
}
