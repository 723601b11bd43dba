"""The communication graph (pyvis) and the hardening of its HTML page: escaped labels and
titles, no heading, its JavaScript inlined and nothing fetched from a CDN."""

from __future__ import annotations

import hashlib
import math
import re

from viz_app.analysis import Analysis, figure_text
from viz_app.charts._style import LINK_STYLES, role_colour
from viz_app.charts._tree import TreeNode, tree_layout, visible_tree
from viz_app.text import canvas_text

GRAPH_GROUP_ABOVE = 60
"""Above this many agents the communication graph groups agents by subtree."""
GRAPH_BUDGET = 24
"""Nodes side by side in a grouped communication graph (as the tree's budget)."""


def communication_html(analysis: Analysis, *, height: int = 560, selected: str | None = None,
                       budget: int = GRAPH_BUDGET) -> str:
    """The communication graph as a self-contained pyvis page: agents as nodes coloured by role,
    an arrow per (sender, recipient) pair weighted by how many spawns, delegations, messages and
    returns it carries. Labels (drawn on a canvas) and titles (shown as text) are trace text as
    it is (`canvas_text`: no entity to show as `&lt;`); pyvis writes them into its script as
    JSON with `<`, `>`, `&` and quotes escaped, so none can end the script. The page has no
    heading, its JavaScript is inlined, and a Content-Security-Policy lets only those inline
    scripts run.

    Above `GRAPH_GROUP_ABOVE` agents the graph is grouped as the spawn tree is (`visible_tree`
    with `budget` nodes side by side): a collapsed subtree or a run of hidden siblings is one
    square node carrying every message of its members, the selected agent and its ancestors
    are always shown on their own, and the nodes stand where the tree puts them (laid out
    here, no live physics)."""
    from pyvis.network import Network

    graph = analysis.communication
    net = Network(height=f"{height}px", width="100%", directed=True, heading="",
                  cdn_resources="in_line", bgcolor="#ffffff", font_color="#343a40")
    big = len(analysis.agents) > GRAPH_GROUP_ABOVE
    if big:
        nodes = visible_tree(analysis, budget=budget, focus=selected)
    else:
        nodes = [TreeNode(key=a, agent=a, kind="agent", parent=analysis.parent.get(a),
                          depth=analysis.depth_of.get(a, 0), members=[a])
                 for a in analysis.agents]
    owner = {m: n.key for n in nodes for m in n.members}
    ids = {n.key: i for i, n in enumerate(nodes)}
    positions = tree_layout(nodes) if big else {}
    for n in nodes:
        stats = analysis.agent_stats[n.agent]
        events = sum(analysis.agent_stats[m].events for m in n.members)
        if n.kind == "agent":
            label = canvas_text(n.agent, 24, one_line=True)
            title = "\n".join([f"{stats.name} ({stats.role})", f"events {stats.events}",
                               f"tokens {figure_text('tokens', stats.tokens)}",
                               f"messages sent {stats.messages_sent}"])
        elif n.kind == "collapsed":
            label = canvas_text(n.agent, 15, one_line=True) + f" +{n.hidden}"
            title = (f"{stats.name} ({stats.role}) and the {n.hidden} agents under it\n"
                     f"events {events}")
        else:
            label = f"+{n.hidden} under " + canvas_text(n.agent, 14, one_line=True)
            title = f"{n.hidden} more agents spawned by {n.agent}\nevents {events}"
        role = stats.role if n.kind != "more" else "more agents"
        options = dict(label=label, title=_tooltip(title),
                       color=role_colour(role) if n.kind != "more" else "#ced4da",
                       size=10 + 4 * math.log1p(events),
                       shape="dot" if n.kind == "agent" else "square",
                       borderWidth=4 if selected is not None and n.agent == selected
                       and n.kind == "agent" else 1)
        if n.key in positions:
            x, y = positions[n.key]
            options.update(x=x * 150, y=-y * 330, physics=False, font={"size": 20})
        net.add_node(ids[n.key], **options)
    merged: dict[tuple[str, str], dict[str, float]] = {}
    for sender, recipient, data in graph.edges(data=True):
        pair = (owner.get(sender, sender), owner.get(recipient, recipient))
        if pair[0] == pair[1] or pair[0] not in ids or pair[1] not in ids:
            continue  # inside one group
        into = merged.setdefault(pair, {})
        for k in [*LINK_STYLES, "weight"]:
            into[k] = into.get(k, 0) + data.get(k, 0)
    names = {n.key: n.agent if n.kind != "more" else f"{n.hidden} under {n.agent}"
             for n in nodes}
    for (sender, recipient), data in merged.items():
        kinds = [f"{k} {data[k]:g}" for k in LINK_STYLES if data.get(k)]
        main = max(LINK_STYLES, key=lambda k: data.get(k, 0))
        net.add_edge(ids[sender], ids[recipient], value=data["weight"],
                     title=_tooltip(f"{names[sender]} → {names[recipient]}: " + ", ".join(kinds)),
                     color=LINK_STYLES[main][0], dashes=main != "spawn",
                     arrows="to")
    if big:
        net.toggle_physics(False)
        # messages between siblings arc a little over their row instead of running along it
        net.options.edges.smooth = {"enabled": True, "type": "curvedCW", "roundness": 0.12}
    else:
        net.barnes_hut(gravity=-4000, spring_length=140)
    page = net.generate_html(notebook=False)
    return harden_html(page)


_EXTERNAL = re.compile(r"<link[^>]+href=\"https?://[^>]*>\s*|<script[^>]+src=\"https?://[^>]*>\s*</script>",
                       re.IGNORECASE)
_COMMENTED = re.compile(r"<!--\s*<link[^>]*>\s*<script[^>]*>\s*</script>\s*-->")
_HEADING = re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>", re.IGNORECASE)
_INLINE_SCRIPT = re.compile(r"<script(?:\s+type=\"text/javascript\")?>(.*?)</script>", re.DOTALL)


def harden_html(page: str) -> str:
    """A generated page with no external resources, no empty heading, and a Content-Security-
    Policy that allows exactly its own inline scripts (so an injected handler could not run)."""
    import base64

    page = _EXTERNAL.sub("", page)
    page = _COMMENTED.sub("", page)
    page = _HEADING.sub("", page)
    hashes = sorted({"'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
                     + "'" for body in _INLINE_SCRIPT.findall(page)})
    policy = (f"default-src 'none'; script-src {' '.join(hashes)}; style-src 'unsafe-inline'; "
              "img-src data:; font-src data:")
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
    return page.replace("<head>", "<head>\n" + meta, 1)


# -- agreement over time ----------------------------------------------------------------------


def _tooltip(text: str) -> str:
    """A node's or edge's title for pyvis: text (vis-network shows a string title with
    `innerText`, so `<` must stay `<`, not `&lt;`), with `href` broken by a word joiner: pyvis
    swaps in its own popup, which sets `innerHTML`, when a node's title holds `href`."""
    return canvas_text(text).replace("href", "hre\u2060f")
