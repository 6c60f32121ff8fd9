#!/usr/bin/env python3
"""Executables from cargo's JSON messages, one per line: KIND<TAB>NAME<TAB>PATH.

    cargo test --workspace --release --no-run --message-format=json | python3 scripts/lib/cargo_executables.py test
    cargo build --workspace --release --examples --bins --message-format=json | python3 scripts/lib/cargo_executables.py bin

With `test`, prints the test harness binaries (unit tests of every library
and binary, integration tests): artifacts built with the test profile.
With `bin`, prints examples and binaries: executables built without it.
KIND is `test`, `example` or `bin`. Lines that are not JSON (cargo's
human-readable output, if mixed in) and every other message are ignored.
Each path is printed once.
"""
import json
import sys


def executables(lines, want):
    seen = set()
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or message.get("reason") != "compiler-artifact":
            continue
        path = message.get("executable")
        if not path or path in seen:
            continue
        is_test = bool(message.get("profile", {}).get("test"))
        target = message.get("target", {})
        if "custom-build" in target.get("kind", []):
            continue  # build scripts run at build time, not on the GPU machine
        if want == "test":
            if not is_test:
                continue
            kind = "test"
        else:
            if is_test:
                continue
            kind = "example" if "example" in target.get("kind", []) else "bin"
        seen.add(path)
        yield kind, target.get("name", ""), path


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("test", "bin"):
        sys.exit("usage: cargo_executables.py test|bin < cargo-json-messages")
    for kind, name, path in executables(sys.stdin, sys.argv[1]):
        print(kind, name, path, sep="\t")


if __name__ == "__main__":
    main()
