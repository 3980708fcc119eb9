@_exported import GATTClient
