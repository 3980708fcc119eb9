import Testing
import ATT
