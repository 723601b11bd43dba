"""The `orchviz` command: one module per group of verbs, each verb a thin function."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from viz_app import __version__
from viz_app.errors import OrchvizError
from viz_app.cli import (app, campaign, db, imports, labels, pool, replay, report, reward,
                         suggest, traces)
from viz_app.text import terminal_text

VERB_MODULES = [traces, imports, app, labels, campaign, report, db, pool, suggest, replay,
                reward]
"""Each module has `register(subparsers)`, adding its verbs with their `--help`."""


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, every verb with its help."""
    parser = argparse.ArgumentParser(
        prog="orchviz",
        description="Browse, label and present orchestration traces of LLM multi-agent systems.")
    parser.add_argument("--version", action="version", version=f"orchviz {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for module in VERB_MODULES:
        module.register(verbs)
    return parser


TEXT_OPTIONS = ("--search",)
"""Options whose value is free text, which may start with `-` (`--search -root`)."""


def with_text_values(argv: list[str]) -> list[str]:
    """The arguments with each free-text option joined to its value (`--search=-root`), so a
    value starting with `-` is not taken for an option (argparse's own reading)."""
    out: list[str] = []
    values = iter(argv)
    for arg in values:
        if arg == "--":
            out += [arg, *values]
            break
        if arg in TEXT_OPTIONS:
            value = next(values, None)
            out.append(arg if value is None else f"{arg}={value}")
        else:
            out.append(arg)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code. What orchviz cannot do (an OrchvizError) and a
    file named on the command line that cannot be opened are said in one line on stderr, with
    exit code 1: never a traceback. Like everything the CLI prints from a trace, a file or a
    database, the line goes through `text.terminal_text`: no escape sequence reaches the
    terminal."""
    args = build_parser().parse_args(with_text_values(
        list(sys.argv[1:] if argv is None else argv)))
    try:
        return int(args.run(args) or 0)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130
    except OrchvizError as err:
        print(f"orchviz: {terminal_text(err)}", file=sys.stderr)
        return 1
    except OSError as err:
        where = f"{err.filename}: " if err.filename is not None else ""
        print(f"orchviz: {terminal_text(where)}{terminal_text(err.strerror or err)}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
