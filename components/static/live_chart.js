// A Plotly chart that stays mounted from run to run (components/live_chart.py says why).
//
// Streamlit calls this module's function with each run's data: bytes holding a header line
// (JSON: the figure's revision, the ring to draw, the chart's config and where plotly.min.js is
// served) and then the figure's JSON. A figure of the same revision is not parsed nor drawn
// again; a new one goes to Plotly.react on the same graph div, which keeps its WebGL contexts
// and compiled shaders. The ring is a layout shape: moving it redraws the shapes alone.
//
// Nothing here turns trace text into HTML: the figure's hover texts were escaped for Plotly
// on the server (viz_app/text.py), and the header's strings go to attributes and URLs only.

const decoder = new TextDecoder();

function loadPlotly(src) {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!window.__orchvizPlotly) {
        window.__orchvizPlotly = new Promise((resolve, reject) => {
            const script = document.createElement('script');
            script.src = new URL(src, document.baseURI).href;
            script.async = true;
            script.onload = () => resolve(window.Plotly);
            script.onerror = () => {
                window.__orchvizPlotly = null;
                reject(new Error('plotly.js could not be loaded from ' + script.src));
            };
            document.head.appendChild(script);
        });
    }
    return window.__orchvizPlotly;
}

function ringShape(style, at) {
    return Object.assign({}, style, {xanchor: at[0], yanchor: at[1]});
}

function shapesWith(state, at) {
    const shapes = (state.baseShapes || []).slice();
    if (at) shapes.push(ringShape(state.ringStyle, at));
    return shapes;
}

// What a click hands to Python: the fields of Streamlit's own Plotly selection points.
function pointOf(p) {
    const out = {curve_number: p.curveNumber, point_number: p.pointNumber,
                 point_index: p.pointIndex, x: p.x, y: p.y};
    if (p.customdata !== undefined) out.customdata = p.customdata;
    return out;
}

function chartDiv(parentElement) {
    let root = parentElement.querySelector(':scope > .orchviz-live-chart');
    if (!root) {
        root = document.createElement('div');
        root.className = 'orchviz-live-chart';
        root.style.width = '100%';
        parentElement.appendChild(root);
    }
    return root;
}

// Runs one at a time per chart, the latest data winning: a figure still being drawn when the
// next run's arrives is followed by that one, and any data between them is skipped.
export default function (component) {
    const {data, parentElement} = component;
    const seq = (parentElement.__orchvizSeq || 0) + 1;
    parentElement.__orchvizSeq = seq;
    const previous = parentElement.__orchvizChain || Promise.resolve();
    parentElement.__orchvizChain = previous.then(() => {
        if (parentElement.__orchvizSeq !== seq) return;
        return draw(component);
    }).catch((err) => console.error('orchviz live chart:', err));
}

// What each chart (by its key) shows, kept for the page's life: Streamlit mounts a chart afresh
// when an element above it comes or goes, and a ring a click made must survive that.
const charts = window.__orchvizCharts || (window.__orchvizCharts = {});

async function draw(component) {
    const {data, parentElement, setTriggerValue} = component;
    if (!data) return;
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    const cut = bytes.indexOf(10);
    const head = JSON.parse(decoder.decode(cut < 0 ? bytes : bytes.subarray(0, cut)));
    const Plotly = await loadPlotly(head.plotly);
    if (cut < 0) return;  // only asked to load plotly.js ahead of the first chart
    const root = chartDiv(parentElement);
    root.dataset.chart = head.chart || '';  // which chart: its key, for tests and benchmarks
    const state = charts[head.chart] || (charts[head.chart] = {});
    state.send = setTriggerValue;  // the latest run's: a click reaches the current script
    const ring = head.ring ? JSON.stringify(head.ring) : '';
    if (state.rev !== head.rev || state.ring !== ring) state.clickAt = null;  // a new ring
    if (root.__orchvizRev === head.rev) {  // this figure is on screen
        if (state.ring !== ring) {  // selected elsewhere: ring it, whatever a click ringed
            state.ring = ring;
            await Plotly.relayout(root, {shapes: shapesWith(state, head.ring && head.ring.at)});
        }
        return;
    }
    root.dataset.pending = '1';
    const figure = JSON.parse(decoder.decode(bytes.subarray(cut + 1)));
    const layout = figure.layout || {};
    state.rev = head.rev;
    state.ring = ring;
    state.ringStyle = head.ring_style || null;
    state.baseShapes = layout.shapes || [];
    layout.shapes = shapesWith(state, state.clickAt || (head.ring && head.ring.at));
    // another trace starts unzoomed; another figure of the same trace (a node opened, the
    // critical path shown) keeps the reviewer's zoom and legend choices
    layout.uirevision = String(layout.uirevision || '') + '|' + (head.tag || head.rev);
    layout.clickmode = 'event';    // a click rings the event (below), Plotly selects nothing
    if (head.height) root.style.height = head.height + 'px';
    await Plotly.react(root, figure.data || [], layout, head.config || {});
    root.__orchvizRev = head.rev;
    if (!root.__orchvizListening) {
        root.__orchvizListening = true;
        root.on('plotly_click', (event) => {
            const p = event && event.points && event.points[0];
            if (!p) return;
            if (state.ringStyle && typeof p.customdata === 'number') {  // marked at once, here
                state.clickAt = [p.x, p.y];
                Plotly.relayout(root, {shapes: shapesWith(state, state.clickAt)});
            }
            state.send('click', pointOf(p));
        });
    }
    root.dataset.tag = head.tag || '';
    delete root.dataset.pending;
}
