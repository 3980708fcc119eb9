import BLECore
import BLESensors
import Testing

@Suite struct SensorValuesTests {
    @Test func repeatedKeysAreNumberedFromOne() {
        var v = SensorValues()
        v.append("temperature", .double(21.5))
        v.append("humidity", .int(40))
        v.append("temperature", .double(22))
        #expect(v.pairs.map(\.key) == ["temperature_1", "humidity", "temperature_2"])
    }
}
