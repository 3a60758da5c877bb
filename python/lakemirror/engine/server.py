"""Entry point of the background engine process (`lakemirror engine start`)."""

from __future__ import annotations

import argparse
import signal
import threading

from pysail.spark import SparkConnectServer

from lakemirror.engine.sail import DEFAULT_PORT, HOST


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args()
    server = SparkConnectServer(HOST, args.port)
    server.start(background=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    stopped.wait()
    server.stop()


if __name__ == "__main__":
    main()
