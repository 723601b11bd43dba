// orchviz keys that Streamlit's button shortcuts cannot give (a constant script: no trace text
// is ever put in it, and it reads nothing of the page but buttons and the focus). The keys are
// those of components/keys.py, handed in by components/keyboard.py as `KEYS` (action -> the
// browser's `KeyboardEvent.key`, lower case, and whether Ctrl or Cmd goes with it):
//   keys-question     opens the keys of the labels panel (clicks its "Keys" button)
//   save, save-too    save, also while the focus is on a radio, a tag or a button
//   1-9, Alt+1-9      tick the n-th answer of the form's first (second) choice question
//   A-Z (a tag's)     toggle that tag
//   correct           put the focus in the correction's first field (its action, or its text)
//   review-skip, 1-3  on the Review page, a digit typed before the skip reasons are drawn
//                     waits for them and picks that reason, never an answer of the form left;
//                     skip-back forgets it
// The answers are ticked here, in the browser, so the reviewer sees the choice at once; the
// click then reaches the server as any click does. Without this script, Streamlit's hidden
// shortcut buttons do the same through the server.
// In a text box the save key is left to Streamlit, which first keeps the text, then saves;
// in a text box of another Streamlit form (a dispute's comment) it submits that form alone.
//   name-done         in the sidebar's Reviewer box: Streamlit keeps the name, then the focus
//                     goes to the page, so the next keys label rather than type into the name
//   leave-box         in any text box: the focus goes to the page
// While the focus is in a text box the page's root carries the class `orchviz-typing`, which
// shows the panels' "keys type there" notes (a style sheet beside this script).
function orchvizKeys(KEYS) {
  if (window.__orchvizKeys) return;
  window.__orchvizKeys = true;

  function is(event, action) {
    // the key of an action of components/keys.py (Alt and Shift are checked where it matters)
    const key = KEYS[action];
    return !!key && (event.key || "").toLowerCase() === key.key &&
      (event.ctrlKey || event.metaKey) === key.ctrl;
  }

  function typing(el) {
    if (!el) return false;
    if (el.isContentEditable || el.tagName === "TEXTAREA") return true;
    if (el.tagName !== "INPUT") return false;
    return !["radio", "checkbox", "button", "submit", "range"].includes(el.type);
  }

  function nameBox(el) {
    return !!(el && el.tagName === "INPUT" && el.closest(".st-key-_reviewer_box"));
  }

  function showTyping() {
    // a select box's search field takes keys too, but it is no text box to the reviewer
    const active = document.activeElement;
    const box = typing(active) && active.getAttribute("role") !== "combobox";
    document.documentElement.classList.toggle("orchviz-typing", box);
  }
  // focusout fires before the focus lands: look once it has
  document.addEventListener("focusin", showTyping, true);
  document.addEventListener("focusout", function () { setTimeout(showTyping, 0); }, true);

  // A text box of a labels form (the note, a correction's words) hands its text to Streamlit
  // only when it loses the focus, so a reload before that lost it. A moment after the last key
  // the text is handed over (the box blurred and focused again, the caret and scroll kept), and
  // the form keeps it as the reviewer's draft; the reviewer's focus never leaves the box. A
  // page that goes away (a reload, a closed tab) hands over at once.
  const NOTE_KEEP_MS = 600;
  let keepTimer = 0;

  function formBox(el) {
    return typing(el) && el.getAttribute("role") !== "combobox" &&
      !!el.closest(".st-key-ann-form");
  }

  function handOver(el) {
    clearTimeout(keepTimer);
    keepTimer = 0;
    if (document.activeElement !== el) return;  // it left the box: Streamlit kept the text
    const start = el.selectionStart, end = el.selectionEnd, way = el.selectionDirection;
    const top = el.scrollTop;
    el.blur();
    el.focus({preventScroll: true});
    try { el.setSelectionRange(start, end, way); } catch (e) { /* not a text field */ }
    el.scrollTop = top;
  }

  document.addEventListener("input", function (event) {
    const el = event.target;
    if (!formBox(el) || event.isComposing) return;
    clearTimeout(keepTimer);
    keepTimer = setTimeout(function () { handOver(el); }, NOTE_KEEP_MS);
  }, true);
  window.addEventListener("pagehide", function () {
    if (keepTimer && formBox(document.activeElement)) handOver(document.activeElement);
  });

  function toPage(el) {
    // after Streamlit's own handlers have seen the key (it keeps the text on Enter and blur)
    setTimeout(function () { if (document.activeElement === el) el.blur(); showTyping(); }, 0);
  }

  function visible(el) { return el && el.offsetParent !== null && !el.disabled; }

  function keysButton() {
    const holders = document.querySelectorAll('[class*="st-key-"]');
    for (const holder of holders) {
      if (/(^|\s)st-key-(ann-\S*-keys|review-keys)(\s|$)/.test(holder.className)) {
        const button = holder.querySelector("button");
        if (visible(button)) return button;
      }
    }
    return null;
  }

  function saveButton() {
    for (const form of document.querySelectorAll(".st-key-ann-form")) {
      const button = form.querySelector('[data-testid="stBaseButton-primary"]');
      if (visible(button)) return button;
    }
    return null;
  }

  function otherForm(el) {
    // the submit button of the Streamlit form a text box is in, when that form is not the
    // labels form's (Ctrl+Enter there submits its own form, and saves no answer)
    const form = el.closest('[data-testid="stForm"]');
    if (!form || el.closest(".st-key-ann-form")) return null;
    const button = form.querySelector('[data-testid^="stBaseButton"][data-testid$="FormSubmit"]');
    return visible(button) ? button : null;
  }

  function answerOption(event) {
    // the n-th answer of the question the digit (Alt+digit) picks, if the form shows one
    const digit = /^(Digit|Numpad)([1-9])$/.exec(event.code);
    if (!digit || event.shiftKey) return null;
    const holder = document.querySelector(
      ".st-key-ann-form .st-key-ann-pick-" + (event.altKey ? "alt" : "plain"));
    const inputs = holder ? holder.querySelectorAll('input[type="radio"]') : [];
    const input = inputs[Number(digit[2]) - 1];
    return input && visible(input.closest("label")) && !input.disabled ? input : null;
  }

  function tagButton(event) {
    // the tag whose letter this is ("Label · D"), in the form's tags
    if (event.altKey || event.shiftKey || !/^[a-zA-Z]$/.test(event.key)) return null;
    const suffix = " · " + event.key.toUpperCase();
    for (const holder of document.querySelectorAll('.st-key-ann-form [class*="st-key-ann-tags-"]')) {
      for (const button of holder.querySelectorAll("button")) {
        if (visible(button) && button.textContent.trim().endsWith(suffix)) return button;
      }
    }
    return null;
  }

  function correctionField() {
    // the first field of the form's first correction box: an action, an agent, a text
    const box = document.querySelector('.st-key-ann-form [class*="st-key-ann-correction-"]');
    if (!box) return null;
    for (const field of box.querySelectorAll('textarea, input')) {
      if (field.type === "radio" ? visible(field.closest("label")) : visible(field)) return field;
    }
    return null;
  }

  function shown(selector) {
    const button = document.querySelector(selector + " button");
    return visible(button) ? button : null;
  }

  // When S asked to skip (the Review page's Skip button, key "review:skip"): the time, so that
  // a digit typed while its run is under way is kept for the reasons rather than the answers.
  let skipAskedAt = 0;
  const SKIP_WAIT_MS = 5000;

  function skipReason(event) {
    const digit = /^(Digit|Numpad)([1-9])$/.exec(event.code);
    if (!digit || event.altKey || event.shiftKey) return null;
    if (!skipAskedAt || performance.now() - skipAskedAt > SKIP_WAIT_MS) return null;
    if (shown(".st-key-review-skip-reason-" + digit[2])) {
      skipAskedAt = 0;  // drawn: Streamlit's own shortcut picks it
      return null;
    }
    return digit[2];
  }

  function pickReasonWhenShown(number, askedAt) {
    const button = shown(".st-key-review-skip-reason-" + number);
    if (button) { skipAskedAt = 0; button.click(); return; }
    if (skipAskedAt !== askedAt || performance.now() - askedAt > SKIP_WAIT_MS) return;
    setTimeout(function () { pickReasonWhenShown(number, askedAt); }, 25);
  }

  // Keys pressed while the page is still being drawn (the first visit's skeleton, a trace
  // still loading) would find no answer to tick and no button to press: they are kept, a note
  // at the foot of the window says so at once, and they are played once the page is drawn; a
  // key that still matches nothing then is said, never dropped in silence.
  const early = [];
  const EARLY_WAIT_MS = 20000;
  let notice = null;

  function say(text) {
    if (!notice) {
      notice = document.createElement("div");
      notice.className = "orchviz-early-keys";
      notice.setAttribute("role", "status");
      notice.style.cssText = "position:fixed;left:50%;bottom:18px;transform:translateX(-50%);" +
        "z-index:1000000;background:#fff3bf;color:#5c3c00;border:1px solid #f59f00;" +
        "border-radius:6px;padding:6px 14px;font:14px system-ui,sans-serif;" +
        "box-shadow:0 2px 8px rgba(0,0,0,.15)";
      document.body.appendChild(notice);
    }
    notice.textContent = text;  // text only: nothing of the page or a trace goes in
    notice.style.display = text ? "block" : "none";
  }

  function pageButton() {
    // a button of the page's own (not yet there on a first visit, while its run still goes)
    return document.querySelector('[data-testid="stMain"] [class*="st-key-"] button');
  }

  function running() {
    // the run goes on, or its elements are not all drawn yet (a skeleton holds their place)
    const app = document.querySelector('[data-testid="stApp"]');
    return !app || app.getAttribute("data-test-script-state") !== "notRunning" ||
      !!document.querySelector('[data-testid="stSkeleton"]');
  }

  function drawing() { return running() && !pageButton(); }

  function labelling(event) {
    // a key that labels or moves on: a digit, a letter, never one with Ctrl or Cmd
    return !(event.ctrlKey || event.metaKey) && !event.isComposing &&
      (/^(Digit|Numpad)[1-9]$/.test(event.code) || /^[a-zA-Z]$/.test(event.key));
  }

  function keyName(k) {
    return (k.altKey ? "Alt+" : "") + (k.shiftKey ? "Shift+" : "") +
      (/^[a-zA-Z]$/.test(k.key) ? k.key.toUpperCase() : k.key);
  }

  const SETTLE_MS = 3000;  // the page's elements follow the end of its run by a few frames

  function playEarly(startedAt, endedAt) {
    const now = performance.now();
    if (running() && now - startedAt < EARLY_WAIT_MS) {
      setTimeout(function () { playEarly(startedAt, 0); }, 50);
      return;
    }
    const first = early[0];
    if (first && !(answerOption(first) || tagButton(first)) &&
        now - (endedAt || now) < SETTLE_MS) {
      setTimeout(function () { playEarly(startedAt, endedAt || now); }, 50);
      return;
    }
    const kept = early.splice(0);
    const missed = [];
    for (const k of kept) {
      const answer = answerOption(k) || tagButton(k);
      if (answer) { answer.click(); continue; }
      const again = new KeyboardEvent("keydown", {key: k.key, code: k.code, altKey: k.altKey,
                                                  shiftKey: k.shiftKey, bubbles: true});
      again.orchvizPlayed = true;
      if (pageButton()) window.dispatchEvent(again); else missed.push(k);
    }
    if (missed.length) {
      say("Pressed while the page loaded, matched nothing here: " +
          missed.map(keyName).join(" ") + ". Press again now that it is drawn.");
    } else {
      say("Played the keys pressed while the page loaded: " + kept.map(keyName).join(" "));
    }
    setTimeout(function () { if (!early.length) say(""); }, missed.length ? 6000 : 2500);
  }

  window.addEventListener("keydown", function (event) {
    if (event.repeat || event.isComposing) return;
    if (!event.orchvizPlayed && labelling(event) && !typing(document.activeElement) &&
        drawing() && !answerOption(event) && !tagButton(event)) {
      event.preventDefault();
      event.stopPropagation();
      early.push({key: event.key, code: event.code, altKey: event.altKey,
                  shiftKey: event.shiftKey});
      say("The page is still loading: kept " + early.map(keyName).join(" ") +
          " for when it is drawn.");
      if (early.length === 1) playEarly(performance.now(), 0);
      return;
    }
    const active = document.activeElement;
    const ctrl = event.ctrlKey || event.metaKey;
    if (typing(active) && !ctrl && !event.altKey && !event.shiftKey &&
        (is(event, "leave-box") || (is(event, "name-done") && nameBox(active)))) {
      toPage(active);
      return;
    }
    if (!ctrl && !typing(active)) {
      const reason = skipReason(event);
      if (reason) {
        event.preventDefault();
        event.stopPropagation();  // not an answer of the form the reviewer is leaving
        pickReasonWhenShown(reason, skipAskedAt);
        return;
      }
      if (is(event, "skip-back")) skipAskedAt = 0;
      const answer = answerOption(event) || tagButton(event);
      if (answer) {
        event.preventDefault();
        event.stopPropagation();  // Streamlit's shortcut button would pick it a second time
        answer.click();
        return;
      }
      if (is(event, "correct") && !event.altKey && !event.shiftKey) {
        const field = correctionField();
        if (field) {
          event.preventDefault();
          event.stopPropagation();
          field.focus();
          return;
        }
      }
      if (is(event, "review-skip") && !event.altKey && !event.shiftKey &&
          shown(".st-key-review-skip")) {
        skipAskedAt = performance.now();  // Streamlit's shortcut clicks Skip itself
      }
    }
    if (is(event, "keys-question") && !event.altKey && !typing(active)) {
      const button = keysButton();
      if (button) {
        event.preventDefault();
        event.stopPropagation();
        button.click();
      }
      return;
    }
    const save = !event.altKey && !event.shiftKey &&
      (is(event, "save") || is(event, "save-too"));
    if (!save) return;
    if (typing(active)) {
      const own = otherForm(active);
      if (own) {  // a box of another form (a dispute's comment): its form, never the answers
        event.preventDefault();
        event.stopPropagation();  // Streamlit's own shortcut would save the labels form too
        active.blur();  // Streamlit keeps the text as the box loses the focus
        own.click();
        return;
      }
      if (!is(event, "save")) event.preventDefault();  // no "Save page" from a text box
      return;  // Streamlit keeps the text and saves (Ctrl+Enter)
    }
    const button = saveButton();
    if (!button) return;
    event.preventDefault();
    event.stopPropagation();  // Streamlit's own shortcut would save a second time
    if (active && active !== document.body && active.blur) active.blur();
    button.click();
  }, true);
}
