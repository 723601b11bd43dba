"""The Streamlit entry of `orchviz app`: the page setup and the navigation, nothing else (and
the one sentence a page shows when orchviz cannot do something, such as reach its database)."""

from pathlib import Path

import streamlit as st
from streamlit.logger import get_logger

from components.keyboard import keyboard
from viz_app.errors import OrchvizError
from viz_app.text import markdown_literal
from viz_app.ui import session

get_logger("viz_app")  # orchviz's warnings (a failing database, with its error) in the server log
FAVICON = Path(__file__).resolve().parent.parent / "static" / "favicon.png"


def main() -> None:
    """Set the page up, choose the page the address names and run it."""
    st.set_page_config(page_title="orchviz", page_icon=str(FAVICON), layout="wide")
    present = st.Page("app_pages/present.py", title="Present", icon=":material/slideshow:",
                      url_path="present")
    page = st.navigation([
        st.Page("app_pages/library.py", title="Library", icon=":material/library_books:",
                default=True),
        trace := st.Page("app_pages/trace.py", title="Trace", icon=":material/account_tree:",
                         url_path="trace"),
        st.Page("app_pages/compare.py", title="Compare", icon=":material/compare:",
                url_path="compare"),
        group := st.Page("app_pages/group.py", title="Group", icon=":material/view_column:",
                         url_path="group"),
        st.Page("app_pages/run.py", title="Training run", icon=":material/monitoring:",
                url_path="run"),
        present,
        st.Page("app_pages/agreement.py", title="Agreement", icon=":material/group:",
                url_path="agreement"),
        review := st.Page("app_pages/review.py", title="Review", icon=":material/rate_review:",
                          url_path="review"),
        adjudicate := st.Page("app_pages/adjudicate.py", title="Adjudicate",
                              icon=":material/gavel:", url_path="adjudicate"),
        disputes := st.Page("app_pages/disputes.py", title="Disputes", icon=":material/forum:",
                            url_path="disputes"),
        campaigns := st.Page("app_pages/campaigns.py", title="Campaigns",
                             icon=":material/campaign:", url_path="campaigns"),
    ])
    # Each page fetches ahead the chart code it draws with, and no other (`session.charts_ahead`):
    # the pages of the trace views draw live charts only, and two pages no chart at all.
    bundles = {group.url_path: (), campaigns.url_path: (),
               trace.url_path: (session.LIVE_BUNDLE,), review.url_path: (session.LIVE_BUNDLE,),
               adjudicate.url_path: (session.LIVE_BUNDLE,)}
    if st.query_params.get("campaign") and page.url_path not in (review.url_path,
                                                                 adjudicate.url_path,
                                                                 disputes.url_path):
        st.switch_page(review, query_params=st.query_params.to_dict())  # `?campaign=NAME`
    if st.query_params.get("present") == "1" and st.query_params.get("trace") \
            and page.url_path != present.url_path:  # `?trace=<id>&present=1` on any page
        st.switch_page(present, query_params=st.query_params.to_dict())
    session.page_style()
    keyboard()  # ? and Ctrl+Enter / Ctrl+S wherever the focus is
    with session.charts_ahead(bundles.get(page.url_path,
                                          (session.PLOTLY_BUNDLE, session.LIVE_BUNDLE))):
        try:
            page.run()
        except OrchvizError as err:  # a database that fails, a file gone since it was listed
            st.error(markdown_literal(err, 400))


# A process pool started with "spawn" (the pool index's workers) runs the parent's main script
# again in each worker, as `__mp_main__`; Streamlit runs this script as `__main__`, so a worker
# would draw a page with no browser to draw it for. Only the app itself runs the app.
if __name__ != "__mp_main__":
    main()
