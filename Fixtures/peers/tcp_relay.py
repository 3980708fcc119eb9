"""A TCP relay for tests: 127.0.0.1:LISTEN to 127.0.0.1:TARGET, both ways, every connection.

Killing the process cuts every connection through it at once (a network partition between
the clients behind it and the server); starting it again on the same port heals it.

    python3 tcp_relay.py LISTEN TARGET      # prints "relaying LISTEN -> TARGET" on stderr when ready
"""
import asyncio
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main(listen, target):
    async def serve(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    server = await asyncio.start_server(serve, "127.0.0.1", listen, reuse_address=True)
    print(f"relaying {listen} -> {target}", file=sys.stderr, flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
