"""TheengsDecoder's side of the sensors workload: the advertisements of
Fixtures/sensors/brands.tsv as decodeBLE's JSON input (id, name, manufacturerdata with the
company identifier first, servicedata and servicedatauuid, servicedatauuid alone for a listed
16-bit service), decoded in a loop; prints {"operationsPerSecond": ..., "decoded": ...}.

    python theengs_bench.py Fixtures/sensors/brands.tsv 200000
"""
import json
import sys
import time

import TheengsDecoder


def structures(data):
    i = 0
    while i < len(data) and data[i] != 0:
        length = data[i]
        if i + 1 + length > len(data):
            break
        yield data[i + 1], data[i + 2:i + 1 + length]
        i += 1 + length


def theengs_input(advertising, response):
    doc = {"id": "AA:BB:CC:DD:EE:FF"}
    for ad_type, value in list(structures(advertising)) + list(structures(response)):
        if ad_type in (0x08, 0x09):
            doc["name"] = value.decode("utf-8", "replace")
        elif ad_type == 0xFF and "manufacturerdata" not in doc:
            doc["manufacturerdata"] = value.hex()
        elif ad_type == 0x16 and "servicedata" not in doc:
            doc["servicedata"] = value[2:].hex()
            doc["servicedatauuid"] = "0x%04x" % int.from_bytes(value[:2], "little")
        elif ad_type in (0x02, 0x03) and "servicedatauuid" not in doc and len(value) >= 2:
            doc["servicedatauuid"] = "0x%04x" % int.from_bytes(value[:2], "little")
    return json.dumps(doc)


def main():
    path, iterations = sys.argv[1], int(sys.argv[2])
    docs = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, advertising, response = line.rstrip("\n").split("\t")
            docs.append(theengs_input(bytes.fromhex(advertising), b"" if response == "-" else bytes.fromhex(response)))
    decoded = sum(1 for d in docs if TheengsDecoder.decodeBLE(d) is not None)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        n = 0
        while n < iterations:
            for d in docs:
                TheengsDecoder.decodeBLE(d)
            n += len(docs)
        best = min(best, time.perf_counter() - start)
    print(json.dumps({"operationsPerSecond": n / best, "decoded": decoded, "payloads": len(docs)}))


if __name__ == "__main__":
    main()
