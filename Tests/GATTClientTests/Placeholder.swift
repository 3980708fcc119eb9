import Testing
import GATTClient
