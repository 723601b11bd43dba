"""The app's entry script is run by Streamlit as `__main__`, and again by every worker a "spawn"
process pool starts while it runs (the pool index's workers), as `__mp_main__`."""

import runpy
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "viz_app" / "ui" / "app.py"


def test_a_spawned_worker_reading_the_app_script_draws_no_page():
    # what multiprocessing's spawn does in each worker with the parent's main script: before,
    # the script set up the navigation outside a Streamlit runtime and failed on a page's address
    names = runpy.run_path(str(APP), run_name="__mp_main__")
    assert callable(names["main"])
    assert "page" not in names  # no page chosen, none run
