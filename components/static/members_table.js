// The members' table of a group page (components/members.py): the prompt folded above it, a row
// per sibling, each column's heading a button that sorts by it (again: the other way), each
// member's number a button that makes it the member being labelled.
//
// Streamlit calls this module's function with each run's data (JSON). The table is built once
// per mount and its rows re-ordered in place, so a heading keeps the focus a keyboard gave it.
// A click re-orders the rows here at once, by the orders the server worked out for every column
// (`data.orders`, the one sort rule), then tells the server, whose next run re-orders the cards
// and the keys' next and previous to match. Every cell is set with textContent and title: no
// text of a trace is ever HTML here.

export default function (component) {
    const {data, parentElement, setTriggerValue} = component;
    if (!data) return;
    const spec = typeof data === 'string' ? JSON.parse(data) : data;
    const root = rootOf(parentElement, spec);
    root.__send = setTriggerValue;  // the latest run's: a click reaches the current script
    root.__spec = spec;
    if (root.__prompt.textContent !== spec.prompt) root.__prompt.textContent = spec.prompt;
    root.__details.hidden = !spec.prompt;
    if (root.__hint.textContent !== spec.hint) root.__hint.textContent = spec.hint;
    fill(root, spec);
    show(root, spec.sort, spec.at);
    // while this table is on the page, the one drawn first with the cards hides (CSS): an
    // attribute of the document, not a `:has()` rule every change of the page would test
    document.documentElement.setAttribute('data-orchviz-members', 'live');
    return () => document.documentElement.removeAttribute('data-orchviz-members');
}

function rootOf(parentElement, spec) {
    const names = spec.columns.map((c) => c.key).join(' ');
    let root = parentElement.querySelector(':scope > .orchviz-members');
    if (root && root.__names === names) return root;
    if (root) root.remove();
    root = document.createElement('div');
    root.className = 'orchviz-members om-live';
    root.__names = names;
    const details = document.createElement('details');
    const summary = document.createElement('summary');
    summary.textContent = 'The prompt';
    const prompt = document.createElement('div');
    prompt.className = 'om-prompt';
    details.append(summary, prompt);
    const table = document.createElement('table');
    table.className = 'og-table';
    const colgroup = document.createElement('colgroup');
    const head = document.createElement('tr');
    for (const column of spec.columns) {
        const col = document.createElement('col');
        if (column.width !== 'auto') col.style.width = column.width;
        colgroup.append(col);
        const th = document.createElement('th');
        th.dataset.key = column.key;
        if (column.numeric) th.className = 'og-num';
        const button = document.createElement('button');
        button.type = 'button';
        button.title = column.tip;
        button.dataset.name = column.name;
        button.addEventListener('click', () => sortBy(root, column));
        th.append(button);
        head.append(th);
    }
    const thead = document.createElement('thead');
    thead.append(head);
    const tbody = document.createElement('tbody');
    table.append(colgroup, thead, tbody);
    const hint = document.createElement('p');
    hint.className = 'om-hint';
    root.append(details, table, hint);
    root.__hint = hint;
    root.__details = details;
    root.__prompt = prompt;
    root.__heads = [...head.children];
    root.__body = tbody;
    root.__rows = new Map();
    parentElement.append(root);
    return root;
}

// Each member's row, made once and its cells updated: the rows of this run's data, by number.
function fill(root, spec) {
    const seen = new Set();
    for (const [i, row] of spec.rows.entries()) {
        seen.add(i);
        let tr = root.__rows.get(i);
        if (!tr) {
            tr = document.createElement('tr');
            tr.dataset.member = String(i);
            for (const [c, column] of spec.columns.entries()) {
                const td = document.createElement('td');
                if (column.numeric) td.className = 'og-num';
                if (c === 0) {
                    td.className = 'og-pick';
                    const button = document.createElement('button');
                    button.type = 'button';
                    button.addEventListener('click', () => pick(root, i));
                    td.append(button);
                } else if (column.key === 'trace') {
                    td.append(document.createElement('a'));
                }
                tr.append(td);
            }
            root.__rows.set(i, tr);
        }
        for (const [c, td] of [...tr.children].entries()) {
            const target = td.firstElementChild || td;
            if (target.textContent !== row.cells[c]) target.textContent = row.cells[c];
            td.title = row.titles[c] || '';
            if (c === 0) target.title = `Label member #${row.n}`;
            if (target.tagName === 'A') target.setAttribute('href', row.link);
        }
    }
    for (const [i, tr] of root.__rows) {
        if (!seen.has(i)) {
            tr.remove();
            root.__rows.delete(i);
        }
    }
}

// The rows in the sort's order, its heading marked, the member being labelled shaded; the
// focus kept where it was (moving a row would drop it).
function show(root, sort, at) {
    root.__sort = sort;
    const spec = root.__spec;
    const orders = spec.orders[sort.by] || spec.orders[spec.columns[0].key];
    const wanted = orders[sort.desc ? 'desc' : 'asc'];
    const focused = root.contains(document.activeElement) ? document.activeElement : null;
    const now = [...root.__body.children].map((tr) => Number(tr.dataset.member));
    if (now.join(' ') !== wanted.join(' ')) {
        for (const i of wanted) root.__body.append(root.__rows.get(i));
        if (focused && document.activeElement !== focused) focused.focus({preventScroll: true});
    }
    for (const [i, tr] of root.__rows) tr.classList.toggle('og-at', i === at);
    for (const th of root.__heads) {
        const button = th.firstElementChild;
        const mine = th.dataset.key === sort.by;
        const arrow = mine ? (sort.desc ? ' ▾' : ' ▴') : '';
        if (button.textContent !== button.dataset.name + arrow) {
            button.textContent = button.dataset.name + arrow;
        }
        if (mine) th.setAttribute('aria-sort', sort.desc ? 'descending' : 'ascending');
        else th.removeAttribute('aria-sort');
    }
}

function sortBy(root, column) {
    const now = root.__sort;
    const desc = now.by === column.key ? !now.desc : !!column.numeric;
    const sort = {by: column.key, desc};
    show(root, sort, root.__spec.at);
    root.__send('sort', `${sort.by}:${desc ? 'desc' : 'asc'}`);
}

function pick(root, i) {
    root.__spec.at = i;
    show(root, root.__sort, i);
    root.__send('pick', i);
}
