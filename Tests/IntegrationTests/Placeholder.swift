import Testing
import BLETestSupport
