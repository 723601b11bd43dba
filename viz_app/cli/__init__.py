"""The `orchviz` command: one module per group of verbs, each verb a thin function."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from viz_app.version import __version__
from viz_app.errors import OrchvizError
from viz_app.text import terminal_text

VERB_MODULES = ["traces", "imports", "app", "labels", "campaign", "report", "db", "pool",
                "suggest", "replay", "reward"]
"""The modules of `viz_app.cli` with verbs, in the order `--help` lists them. Each has
`register(subparsers)`, adding its verbs with their `--help`."""

VERBS: dict[str, tuple[str, str]] = {
    "validate": ("traces", "check trace files against the schema"),
    "inspect": ("traces", "print a trace's orchestration figures"),
    "schema": ("traces", "print the JSON Schema orchviz reads and writes"),
    "synth": ("traces", "write a large synthetic trace"),
    "import": ("imports", "convert traces from other formats (Claude Code, OpenAI Agents, "
               "OTLP...)"),
    "app": ("app", "start the browser app"),
    "labels": ("labels", "export, import and check reward labels"),
    "campaign": ("campaign", "review campaigns: a team labels a sampled pool"),
    "report": ("report", "write a trace's case study as one self-contained file"),
    "db": ("db", "show or upgrade the database's schema"),
    "pool": ("pool", "pools of many traces: Parquet or JSON Lines shards, local or on S3"),
    "suggest": ("suggest", "suggest labels with the rules or a judge model"),
    "replay": ("replay", "continue a trace from an edited decision with a model"),
    "reward": ("reward", "train a reward model on the team's labels and serve it to trainers"),
}
"""Each verb -> the module that registers it and its one-line help. The command imports only
the module of the verb it runs (the verbs' modules load the readers, the stores, SQLAlchemy:
about a second of CPU together), so `orchviz --help` and a verb run from a loop or cron start
fast; the other verbs stand in the parser by name and help alone. tests/test_cli_startup.py holds
this table to what the modules register."""


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, every verb registered in full (every verb module imported)."""
    return parser_with(set(VERB_MODULES))


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The command line as `argv` needs it: the named verb's module registered in full, every
    other verb by its name and help alone (enough for the top level's `--help` and errors)."""
    verb = verb_of(argv)
    return parser_with({VERBS[verb][0]} if verb in VERBS else set())


def parser_with(modules: set[str]) -> argparse.ArgumentParser:
    """The parser with the verbs of `modules` registered by their modules, the others listed."""
    parser = argparse.ArgumentParser(
        prog="orchviz",
        description="Browse, label and present orchestration traces of LLM multi-agent systems.")
    parser.add_argument("--version", action="version", version=f"orchviz {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for module in VERB_MODULES:
        if module in modules:
            importlib.import_module(f"viz_app.cli.{module}").register(verbs)
            continue
        for name, (home, help_text) in VERBS.items():
            if home == module:
                verbs.add_parser(name, help=help_text, add_help=False)
    return parser


def verb_of(argv: Sequence[str]) -> str | None:
    """The verb a command line names: its first word that is not an option (the top level's
    options, `--help` and `--version`, take no value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


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
    words = list(sys.argv[1:] if argv is None else argv)
    args = parser_for(words).parse_args(with_text_values(words))
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
