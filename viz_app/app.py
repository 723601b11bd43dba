"""The Streamlit entry of `orchviz app`: the page setup and the navigation, nothing else."""

from pathlib import Path

import streamlit as st

st.set_page_config(page_title="orchviz", page_icon=str(Path(__file__).parent / "static" / "favicon.png"),
                   layout="wide")
st.navigation([
    st.Page("app_pages/library.py", title="Library", icon=":material/library_books:",
            default=True),
    st.Page("app_pages/trace.py", title="Trace", icon=":material/account_tree:",
            url_path="trace"),
    st.Page("app_pages/agreement.py", title="Agreement", icon=":material/group:",
            url_path="agreement"),
]).run()
