"""The command starts without importing every verb: `orchviz --help` lists every verb from the
static table (`viz_app.cli.VERBS`), a verb imports its own module alone, and each verb's own
`--help` (and each sub-verb's) is still the full one its module registers."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest

from viz_app.cli import VERB_MODULES, VERBS, build_parser, main


def registered(module: str) -> dict[str, str]:
    """What one verb module registers: each top-level verb -> its help."""
    verbs = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(f"viz_app.cli.{module}").register(verbs)
    return {action.dest: action.help for action in verbs._choices_actions}


def subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def every_command_line() -> list[list[str]]:
    """Every verb and sub-verb of the full parser, as the words that name it."""
    found: list[list[str]] = []

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        sub = subparsers(parser)
        for name, child in (sub.choices.items() if sub else ()):
            found.append([*words, name])
            walk(child, [*words, name])

    walk(build_parser(), [])
    return found


def loaded_after(argv: list[str]) -> dict:
    """Run `main(argv)` in a fresh interpreter; which of orchviz's modules (and SQLAlchemy) it
    imported, and what it printed."""
    probe = ("import contextlib, io, json, sys\n"
             "from viz_app.cli import main\n"
             "out = io.StringIO()\n"
             "with contextlib.redirect_stdout(out):\n"
             "    try:\n"
             f"        main({argv!r})\n"
             "    except SystemExit:\n"
             "        pass\n"
             "print(json.dumps({'modules': sorted(m for m in sys.modules if m.startswith("
             "('viz_app', 'sqlalchemy'))), 'out': out.getvalue()}))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def test_the_table_of_verbs_is_what_the_verb_modules_register():
    table = {module: {name: help_text for name, (home, help_text) in VERBS.items()
                      if home == module} for module in VERB_MODULES}
    assert {module: registered(module) for module in VERB_MODULES} == table
    assert list(VERBS) == list(subparsers(build_parser()).choices)  # the order --help lists


def test_the_top_level_help_lists_every_verb_with_its_help_and_imports_no_verb_module():
    seen = loaded_after(["--help"])
    for name, (_, help_text) in VERBS.items():
        assert f"    {name} " in seen["out"]
        assert " ".join(help_text.split()[:3]) in " ".join(seen["out"].split())
    assert not [m for m in seen["modules"] if m.startswith("viz_app.cli.")]
    assert not [m for m in seen["modules"] if m.startswith(("sqlalchemy", "viz_app.workspace",
                                                            "viz_app.io", "viz_app.analysis"))]


def test_a_verb_imports_its_own_module_and_no_other_verbs():
    seen = loaded_after(["schema"])
    assert '"$schema"' in seen["out"]
    verbs = {m.rpartition(".")[2] for m in seen["modules"] if m.startswith("viz_app.cli.")}
    assert verbs == {"traces"}
    assert not [m for m in seen["modules"] if m.startswith(("sqlalchemy", "viz_app.workspace"))]


def test_the_console_script_answers_help_at_the_top_and_on_a_verb():
    for argv in (["--help"], ["db", "--help"], ["pool", "follow", "--help"]):
        done = subprocess.run([sys.executable, "-m", "viz_app", *argv], capture_output=True,
                              text=True, check=True)
        assert done.stdout.startswith(f"usage: orchviz {' '.join(argv[:-1])}".rstrip())
        assert done.stderr == ""


@pytest.mark.parametrize("words", every_command_line(), ids=" ".join)
def test_every_verb_and_sub_verb_answers_its_full_help(words, capsys):
    with pytest.raises(SystemExit) as stop:
        main([*words, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: orchviz {' '.join(words)}")
    assert "-h, --help" in out


def test_an_unknown_verb_is_refused_naming_every_verb(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["no-such-verb"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'no-such-verb'" in err
    assert all(f"'{name}'" in err for name in VERBS)


def test_the_library_api_is_still_the_packages_face():
    import viz_app

    trace = viz_app.load_trace("demo_traces/01_centralized_research_faithful.json")
    assert isinstance(trace, viz_app.Trace)
    assert viz_app.analyze(trace).figures.depth >= 1
    assert set(viz_app.__all__) <= set(dir(viz_app))
