"""Entry point of the background engine process (`lakemirror engine start`)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from pysail.spark import SparkConnectServer

from lakemirror.engine.sail import DEFAULT_PORT, HOST


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0: any free port")
    parser.add_argument("--with-parent", action="store_true",
                        help="print the port as JSON, and stop when stdin closes")
    args = parser.parse_args()
    server = SparkConnectServer(HOST, args.port)
    server.start(background=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    signal.signal(signal.SIGINT, lambda *_: stopped.set())
    if args.with_parent:
        print(json.dumps({"port": server.listening_address[1]}), flush=True)
        threading.Thread(target=_stop_when_stdin_closes, args=(stopped,), daemon=True).start()
    stopped.wait()
    server.stop()


def _stop_when_stdin_closes(stopped: threading.Event) -> None:
    """The parent holds our stdin: when it exits, for whatever reason, we stop too."""
    sys.stdin.buffer.read()
    stopped.set()


if __name__ == "__main__":
    main()
